#!/usr/bin/env python3
"""Every GPU test case is a meson test.

  check_gpu_cases.py TEST_DIR

The GPU executables run one case per meson test (the case's name as the
cmocka filter), so a case that is in a file's cmocka list but named
nowhere in test/meson.build would never run: not on the GPU machine, not
in CI. Each name in a cmocka_unit_test(...) of test/test_gpu*.c must
appear in test/meson.build as a quoted string."""
import os
import re
import sys


def main():
    test_dir = sys.argv[1]
    with open(os.path.join(test_dir, 'meson.build')) as f:
        registered = set(re.findall(r"'([A-Za-z0-9_]+)'", f.read()))
    missing, seen = [], 0
    for name in sorted(os.listdir(test_dir)):
        if not (name.startswith('test_gpu') and name.endswith('.c')):
            continue
        with open(os.path.join(test_dir, name)) as f:
            for case in re.findall(r'cmocka_unit_test\w*\(\s*(\w+)', f.read()):
                seen += 1
                if case not in registered:
                    missing.append(f'{name}: {case}')
    if seen == 0:
        print('no cmocka cases found in test/test_gpu*.c')
        return 1
    for m in missing:
        print(f'{m} is not a meson test (test/meson.build names no such case)')
    print(f'{seen} GPU cases, {len(missing)} not registered')
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
