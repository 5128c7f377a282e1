#!/usr/bin/env python3
"""The shared library exports exactly the public functions of router.h,
each with the alphamoe_ prefix, and needs no CUDA or C++ runtime library at
link time (the driver is loaded at run time)."""
import os
import re
import subprocess
import sys

FORBIDDEN_NEEDED = ('libcuda', 'libcudart', 'libstdc++', 'libgcc_s')


def main() -> int:
    lib = sys.argv[1]
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'include', 'alphamoe', 'router.h')
    with open(header) as f:
        text = f.read()
    declared = set(re.findall(r'ALPHAMOE_API\s+[^;(]*?\b(alphamoe_\w+)\s*\(', text))
    nm = subprocess.run(['nm', '-D', '--defined-only', lib], check=True, stdout=subprocess.PIPE,
                        text=True).stdout
    exported = set()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3:
            exported.add(parts[2].split('@')[0])
    failures = []
    stray = sorted(s for s in exported if not s.startswith('alphamoe_'))
    if stray:
        failures.append('exported without the alphamoe_ prefix: ' + ', '.join(stray))
    missing = sorted(declared - exported)
    if missing:
        failures.append('declared in router.h but not exported: ' + ', '.join(missing))
    extra = sorted(exported - declared)
    if extra:
        failures.append('exported but not declared in router.h: ' + ', '.join(extra))
    dyn = subprocess.run(['readelf', '-d', lib], check=True, stdout=subprocess.PIPE, text=True).stdout
    needed = re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', dyn)
    bad = [n for n in needed if n.startswith(FORBIDDEN_NEEDED)]
    if bad:
        failures.append('links against ' + ', '.join(bad))
    if not re.search(r'\(SONAME\)\s+Library soname: \[libalphamoe_router\.so\.\d+\]', dyn):
        failures.append('no SONAME libalphamoe_router.so.N')
    for f in failures:
        print('FAIL:', f)
    print(f'{len(exported)} exported symbols, {len(declared)} declared; NEEDED: {", ".join(needed)}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
