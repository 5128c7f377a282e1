#!/usr/bin/env python3
"""Compiles one kernel source to a cubin for one architecture.

Keeps ptxas's resource report next to the cubin and fails the build when a
kernel spills or needs a local-memory stack: both put per-thread traffic on
the memory path the router is meant to spend on logits.
"""
import argparse
import re
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--nvcc', required=True)
    ap.add_argument('--arch', required=True, help='e.g. 90a')
    ap.add_argument('--define', action='append', default=[])
    ap.add_argument('--include', action='append', default=[])
    ap.add_argument('--depfile', required=True)
    ap.add_argument('--report', required=True)
    ap.add_argument('-o', '--output', required=True)
    ap.add_argument('source')
    args = ap.parse_args()

    cmd = [args.nvcc, '-cubin', '-std=c++17', '-O3',
           '-gencode', f'arch=compute_{args.arch},code=sm_{args.arch}',
           '-Xptxas', '-v', '-MD', '-MF', args.depfile, '-o', args.output]
    cmd += [f'-D{d}' for d in args.define]
    cmd += [f'-I{i}' for i in args.include]
    cmd.append(args.source)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(args.report, 'w') as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        return proc.returncode

    problems = []
    frames = re.findall(r'(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads',
                        proc.stdout)
    if not frames:
        problems.append('no resource report from ptxas')
    for stack, stores, loads in frames:
        if int(stack) or int(stores) or int(loads):
            problems.append(f'stack frame {stack} B, spill stores {stores} B, spill loads {loads} B')
    if problems:
        sys.stderr.write(proc.stdout)
        sys.stderr.write(f'{args.output}: ' + '; '.join(problems) + '\n')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
