#!/usr/bin/env python3
"""Every place that states the release states the project's version:

  check_versions.py SOURCE_ROOT VERSION       (VERSION: meson.build's)

- packaging/debian/changelog, the newest entry;
- packaging/rust/Cargo.toml, the crate's version;
- packaging/go/version.go, ModuleVersion, the ALPHAMOE_VERSION_NUMBER the
  package requires and the version its #error names;
- the Python package: `version` of a pyproject.toml (the root's or
  packaging/python's) unless it is dynamic (then meson.build's), and any
  `__version__` of packaging/python.

Prints each place read with what it says."""
import glob
import os
import re
import sys


def first_match(path, pattern, flags=0):
    try:
        with open(path) as f:
            m = re.search(pattern, f.read(), flags)
    except FileNotFoundError:
        return None
    return m.group(1) if m else None


def main() -> int:
    root, version = sys.argv[1], sys.argv[2]
    major, minor, patch = (int(p) for p in version.split('.'))
    places = {  # place -> what it says (None: not found)
        'packaging/debian/changelog': first_match(os.path.join(root, 'packaging/debian/changelog'),
                                                  r'\Aalphamoe-router \(([^)-]+)'),
        'packaging/rust/Cargo.toml': first_match(os.path.join(root, 'packaging/rust/Cargo.toml'),
                                                 r'^\[package\][^\[]*?^version\s*=\s*"([^"]+)"', re.M | re.S),
    }
    go = os.path.join(root, 'packaging/go/version.go')
    places['packaging/go/version.go ModuleVersion'] = first_match(go, r'const ModuleVersion = "([^"]+)"')
    number = first_match(go, r'#if ALPHAMOE_VERSION_NUMBER < (\d+)')
    places['packaging/go/version.go version guard'] = (
        None if number is None else f'{int(number) // 10000}.{int(number) // 100 % 100}.{int(number) % 100}')
    places['packaging/go/version.go #error'] = first_match(go, r'#error ".*?(\d+\.\d+\.\d+) or newer"')

    python = []
    for pyproject in ('pyproject.toml', 'packaging/python/pyproject.toml'):
        path = os.path.join(root, pyproject)
        if not os.path.isfile(path):
            continue
        project = first_match(path, r'^\[project\]\s*$(.*?)(?=^\[|\Z)', re.M | re.S) or ''
        dynamic = re.search(r'^dynamic\s*=\s*\[[^\]]*[\'"]version[\'"]', project, re.M)
        stated = re.search(r'^version\s*=\s*[\'"]([^\'"]+)[\'"]', project, re.M)
        places[f'{pyproject} [project]'] = version if dynamic else (stated.group(1) if stated else None)
        python.append(pyproject)
    for path in sorted(glob.glob(os.path.join(root, 'packaging/python/**/*.py'), recursive=True)):
        stated = first_match(path, r'^__version__\s*=\s*[\'"]([^\'"]+)[\'"]', re.M)
        if stated is not None:
            places[f'{os.path.relpath(path, root)} __version__'] = stated
            python.append(path)

    failures = [f'{place} says {said or "nothing"}, meson.build {version}'
                for place, said in places.items() if said != version]
    for place, said in places.items():
        print(f'{place}: {said}')
    if not python:
        print('the Python package states no version (no pyproject.toml, no __version__)')
    for f in failures:
        print('FAIL:', f)
    print(f'meson.build: {version} ({major * 10000 + minor * 100 + patch}); '
          f'{len(places) - len(failures)} of {len(places)} places agree')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
