#!/usr/bin/env python3
"""Configures the project with stand-in toolkits reporting different CUDA
releases and checks which sm_* images the build would make: an arch the
toolkit cannot build is dropped with a message, the others stay."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

CASES = [
    ('12.6', ['90a']),
    ('12.8', ['90a', '100a']),
    ('12.9', ['90a', '100a', '103a']),
    ('13.0', ['90a', '100a', '103a']),
]
ALL_ARCHS = ['90a', '100a', '103a']


def fake_toolkit(root: str, release: str) -> str:
    bin_dir = os.path.join(root, 'bin')
    os.makedirs(bin_dir)
    os.makedirs(os.path.join(root, 'include'))
    # The copyright year is what Meson's own version probe would read.
    nvcc = os.path.join(bin_dir, 'nvcc')
    with open(nvcc, 'w') as f:
        f.write('#!/bin/sh\n'
                'echo "nvcc: NVIDIA (R) Cuda compiler driver"\n'
                'echo "Copyright (c) 2005-2031 NVIDIA Corporation"\n'
                f'echo "Cuda compilation tools, release {release}, V{release}.99"\n')
    fatbinary = os.path.join(bin_dir, 'fatbinary')
    with open(fatbinary, 'w') as f:
        f.write('#!/bin/sh\nexit 0\n')
    for p in (nvcc, fatbinary):
        os.chmod(p, 0o755)
    return nvcc


def configure(source: str, work: str, release: str):
    nvcc = fake_toolkit(os.path.join(work, 'cuda-' + release), release)
    build = os.path.join(work, 'build-' + release)
    meson = shutil.which('meson')
    proc = subprocess.run([meson, 'setup', build, source, f'-Dnvcc={nvcc}', '-Dtests=false',
                           '-Dtools=false'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        return None, proc.stdout
    targets = json.loads(subprocess.run([meson, 'introspect', '--targets', build], check=True,
                                        stdout=subprocess.PIPE, text=True).stdout)
    names = [t['name'] for t in targets]
    archs = sorted({a for a in ALL_ARCHS for n in names if n.endswith('.sm_' + a)},
                   key=ALL_ARCHS.index)
    return archs, proc.stdout


def main() -> int:
    source = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        for release, expected in CASES:
            archs, log = configure(source, work, release)
            dropped = [a for a in ALL_ARCHS if a not in expected]
            ok = archs == expected and all(f'not building sm_{a}' in log for a in dropped)
            print(f'CUDA {release}: images {archs}, expected {expected}: {"ok" if ok else "FAIL"}')
            if not ok:
                failures += 1
                print(log)
        archs, log = configure(source, work, '11.8')
        if archs is not None or 'can build none' not in log:
            print('CUDA 11.8: configure should fail with a clear message: FAIL')
            print(log)
            failures += 1
        else:
            print('CUDA 11.8: refused with a clear message: ok')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
