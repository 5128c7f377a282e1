#!/usr/bin/env python3
"""Combines the cubins of one kernel into a fatbin: one ELF image per arch."""
import argparse
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--fatbinary', required=True)
    ap.add_argument('-o', '--output', required=True)
    ap.add_argument('--image', nargs=2, action='append', metavar=('ARCH', 'CUBIN'), required=True)
    args = ap.parse_args()
    cmd = [args.fatbinary, f'--create={args.output}', '-64']
    cmd += [f'--image3=kind=elf,sm={arch},file={cubin}' for arch, cubin in args.image]
    return subprocess.run(cmd).returncode


if __name__ == '__main__':
    sys.exit(main())
