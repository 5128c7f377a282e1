#!/usr/bin/env python3
"""Runs a GPU sanitizer sweep under one compute-sanitizer tool:

    run_sanitizer.py TOOL TEST_BINARY TOOLKIT_BIN [SWEEP_CASE]

Skips (exit 77) where there is no compute-sanitizer or no GPU. With a GPU,
a sweep that skips all the same (its own exit 77: a case the kernels
refused) fails: a sweep that ran nothing has checked nothing."""
import os
import shutil
import subprocess
import sys

SKIP = 77


def main() -> int:
    tool, test_gpu, toolkit_bin = sys.argv[1], sys.argv[2], sys.argv[3]
    sweep = sys.argv[4] if len(sys.argv) > 4 else 'gpu_sanitizer_sweep'
    sanitizer = shutil.which('compute-sanitizer') or os.path.join(toolkit_bin, 'compute-sanitizer')
    if not os.access(sanitizer, os.X_OK):
        print('SKIP: compute-sanitizer not found')
        return SKIP
    # Without a GPU every case of the binary exits 77 before any work.
    probe = subprocess.run([test_gpu, 'no_such_case'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if probe.returncode == SKIP:
        print(probe.stdout.strip())
        return SKIP
    cmd = [sanitizer, '--tool', tool, '--error-exitcode', '99', '--print-limit', '20']
    if tool == 'racecheck':
        cmd += ['--racecheck-report', 'all']
    cmd += [test_gpu, sweep]
    print(' '.join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(proc.stdout)
    if proc.returncode == SKIP:
        print('FAIL: the sweep skipped on a machine with a GPU (see its output above)')
        return 1
    if proc.returncode != 0:
        return 1
    if 'ERROR SUMMARY: 0 errors' not in proc.stdout and 'RACECHECK SUMMARY: 0 hazards' not in proc.stdout:
        print('FAIL: no clean summary from compute-sanitizer')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
