#!/usr/bin/env python3
"""packaging/debian agrees with the project:

  check_debian.py SOURCE_ROOT ABI_VERSION

(test/check_versions.py checks debian/changelog's version.)
- the runtime package is named for the SONAME (libalphamoe-router<abi>);
- debian/libalphamoe-router<abi>.symbols lists exactly the committed
  exports (capi/exported_symbols.txt) for that SONAME."""
import os
import sys


def main() -> int:
    root, abi = sys.argv[1], sys.argv[2]
    debian = os.path.join(root, 'packaging', 'debian')
    failures = []
    package = f'libalphamoe-router{abi}'
    with open(os.path.join(debian, 'control')) as f:
        control = f.read()
    if f'Package: {package}\n' not in control:
        failures.append(f'debian/control has no package {package} for SONAME libalphamoe_router.so.{abi}')
    symbols_path = os.path.join(debian, f'{package}.symbols')
    exported = set()
    with open(os.path.join(root, 'capi', 'exported_symbols.txt')) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith('#') and not line.startswith('abi '):
                name, _, node = line.partition('@@')
                exported.add(f'{name}@{node or name}')
    listed = set()
    try:
        with open(symbols_path) as f:
            header = f.readline().split()
            if header[:2] != [f'libalphamoe_router.so.{abi}', package]:
                failures.append(f'{symbols_path} is for {" ".join(header[:2])}')
            for line in f:
                if line.startswith(' '):
                    listed.add(line.split()[0])
    except FileNotFoundError:
        failures.append(f'no {symbols_path}')
    if listed and listed != exported:
        failures.append(f'{symbols_path} differs from capi/exported_symbols.txt: '
                        f'missing {sorted(exported - listed)}, extra {sorted(listed - exported)}')
    for f in failures:
        print('FAIL:', f)
    print(f'debian: {package}, {len(listed)} symbols')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
