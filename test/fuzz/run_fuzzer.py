#!/usr/bin/env python3
"""Runs the libFuzzer target for a fixed time from the committed seed corpus
and prints how many inputs it ran. New inputs go to a scratch corpus in the
build directory (the committed one is only read); a crash leaves its input
there as crash-* and fails the test.

    run_fuzzer.py FUZZER SEED_CORPUS BUILD_DIR   (ALPHAMOE_FUZZ_SECONDS, default 60)
"""
import os
import re
import subprocess
import sys


def main() -> int:
    fuzzer, seeds, build_dir = sys.argv[1:4]
    seconds = int(os.environ.get('ALPHAMOE_FUZZ_SECONDS', '60'))
    work = os.path.join(build_dir, 'fuzz-corpus')
    artifacts = os.path.join(build_dir, 'fuzz-artifacts')
    os.makedirs(work, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    cmd = [fuzzer, f'-max_total_time={seconds}', '-timeout=20', '-rss_limit_mb=4096', '-print_final_stats=1',
           f'-artifact_prefix={artifacts}/', work, seeds]
    print(' '.join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors='replace')
    lines = proc.stdout.splitlines()
    # libFuzzer's progress lines are many: keep the start, the end and any report.
    for line in lines[:20] + ['...'] + lines[-60:] if len(lines) > 80 else lines:
        print(line)
    runs = re.search(r'stat::number_of_executed_units:\s*(\d+)', proc.stdout)
    done = re.search(r'Done (\d+) runs in (\d+) second', proc.stdout)
    count = runs.group(1) if runs else (done.group(1) if done else '?')
    print(f'fuzz_host: {count} inputs in {seconds} s, exit status {proc.returncode}')
    return 0 if proc.returncode == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
