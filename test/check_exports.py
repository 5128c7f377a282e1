#!/usr/bin/env python3
"""The shared library's exports are exactly the committed list.

  check_exports.py LIBRARY ABI_VERSION EXPORTED_SYMBOLS_TXT

- the dynamic symbols (`nm -D --defined-only`) equal capi/exported_symbols.txt,
  and that list is recorded for the build's ABI version: a change of the
  exports fails here until the list is edited, which is where the ABI version
  is decided;
- every exported function is declared in router.h or router_diagnostics.h, has the
  alphamoe_ prefix and is bound to a version node of this ABI version
  (ALPHAMOE_ROUTER_<abi>, or a later ALPHAMOE_ROUTER_<abi>.N);
- the only other exported symbols are those version nodes;
- the SONAME is libalphamoe_router.so.<abi>, and no CUDA or C++ runtime
  library is needed at link time (the driver is loaded at run time)."""
import os
import re
import subprocess
import sys

FORBIDDEN_NEEDED = ('libcuda', 'libcudart', 'libstdc++', 'libgcc_s')


def read_committed(path):
    """Returns (abi version, set of symbols) of the committed list."""
    abi, symbols = None, set()
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            if line.startswith('abi '):
                abi = line.split()[1]
            else:
                symbols.add(line)
    return abi, symbols


def library_exports(lib):
    """Returns {symbol as nm names it: nm type letter}."""
    nm = subprocess.run(['nm', '-D', '--defined-only', lib], check=True, stdout=subprocess.PIPE,
                        text=True).stdout
    exports = {}
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3:
            exports[parts[2]] = parts[1]
    return exports


# The stable API and the opt-in diagnostics.
PUBLIC_HEADERS = ('router.h', 'router_diagnostics.h')


def main() -> int:
    lib, abi, listing = sys.argv[1], sys.argv[2], sys.argv[3]
    include = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'include', 'alphamoe')
    declared = set()
    for header in PUBLIC_HEADERS:
        with open(os.path.join(include, header)) as f:
            declared |= set(re.findall(r'ALPHAMOE_API\s+[^;(]*?\b(alphamoe_\w+)\s*\(', f.read()))
    exports = library_exports(lib)
    failures = []

    committed_abi, committed = read_committed(listing)
    built = set(exports)
    if committed_abi != abi:
        failures.append(f'the ABI version is {abi} but {listing} records ABI {committed_abi}: '
                        'write the new ABI\'s list there')
    elif built != committed:
        added = sorted(built - committed)
        removed = sorted(committed - built)
        failures.append(
            f'the exported symbols changed while the ABI version stayed {abi}'
            + (f'; new: {", ".join(added)}' if added else '')
            + (f'; gone: {", ".join(removed)}' if removed else '')
            + f'. A removed or changed function needs a new ABI version (meson.build abi_version); '
              f'an added one a new version node in capi/alphamoe_router.map; then record the '
              f'exports in {listing}')

    node = re.compile(rf'ALPHAMOE_ROUTER_{re.escape(abi)}(\.\d+)?')
    nodes = {name for name, kind in exports.items() if kind == 'A'}
    for n in sorted(nodes):
        if not node.fullmatch(n):
            failures.append(f'version node {n} does not belong to ABI {abi}')
    functions = {}
    for name, kind in exports.items():
        if kind == 'A':
            continue
        base, _, version = name.partition('@@')
        if not version:
            base, _, version = name.partition('@')
        functions[base] = version
        if not base.startswith('alphamoe_'):
            failures.append(f'exported without the alphamoe_ prefix: {name}')
        if version not in nodes:
            failures.append(f'exported without a version node of ABI {abi}: {name}')
    missing = sorted(declared - set(functions))
    if missing:
        failures.append('declared in the public headers but not exported: ' + ', '.join(missing))
    extra = sorted(set(functions) - declared)
    if extra:
        failures.append('exported but not declared in the public headers: ' + ', '.join(extra))

    dyn = subprocess.run(['readelf', '-d', lib], check=True, stdout=subprocess.PIPE, text=True).stdout
    needed = re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', dyn)
    bad = [n for n in needed if n.startswith(FORBIDDEN_NEEDED)]
    if bad:
        failures.append('links against ' + ', '.join(bad))
    soname = re.search(r'\(SONAME\)\s+Library soname: \[([^\]]+)\]', dyn)
    if not soname or soname.group(1) != f'libalphamoe_router.so.{abi}':
        failures.append(f'SONAME is {soname.group(1) if soname else "missing"}, '
                        f'not libalphamoe_router.so.{abi}')
    for f in failures:
        print('FAIL:', f)
    print(f'{len(functions)} exported functions in version nodes {", ".join(sorted(nodes))}, '
          f'{len(declared)} declared; NEEDED: {", ".join(needed)}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
