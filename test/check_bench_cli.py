#!/usr/bin/env python3
"""alphamoe-bench's command line without a GPU: the shape table it lists
(every shape of the benchmark, each E512 shape also in shared-expert mode,
the names --shapes accepts, the stock figures labelled as a reference not
measured by the program), and the exit status of a mistake (2) and of a
run with nothing to measure (77, or a real run where a GPU is present)."""
import re
import subprocess
import sys

SHAPES = [
    (512, 1, 10, 8), (512, 8, 10, 8), (512, 32, 8, 16), (512, 128, 8, 16), (512, 128, 10, 8),
    (512, 512, 10, 8), (512, 4096, 10, 64), (512, 16384, 10, 8),
    (256, 1, 8, 64), (256, 64, 8, 64), (256, 1024, 8, 64), (256, 8192, 8, 64),
    (128, 64, 8, 64), (128, 4096, 8, 64), (8, 16, 2, 64), (8, 4096, 2, 64),
    (2048, 1, 32, 64), (2048, 2048, 32, 64),
]
# The routing flavours, each at its model's shape, after the shapes above.
FLAVOUR_SHAPES = [
    (256, 1, 8, 64, 'deepseek-v3'), (256, 8, 8, 64, 'deepseek-v3'), (256, 128, 8, 64, 'deepseek-v3'),
    (256, 4096, 8, 64, 'deepseek-v3'),
    (384, 1, 8, 64, 'kimi-k2'), (384, 4096, 8, 64, 'kimi-k2'), (60, 1, 4, 64, 'qwen2-moe'),
    (60, 4096, 4, 64, 'qwen2-moe'), (16, 1, 1, 64, 'llama4'), (16, 4096, 1, 64, 'llama4'),
    (512, 1, 10, 8, 'bf16'), (512, 4096, 10, 64, 'bf16'), (512, 4096, 10, 64, 'ep-map64'),
    (512, 1, 10, 8, 'f16'), (512, 4096, 10, 64, 'f16'), (512, 16384, 10, 8, 'bf16'),
    (256, 8192, 8, 64, 'bf16'), (128, 4096, 8, 64, 'bf16'),
    (256, 1, 8, 64, 'deepseek-v3-bf16'), (256, 4096, 8, 64, 'deepseek-v3-bf16'),
    (384, 1, 6, 64, 'deepseek-v4-pro'), (384, 4096, 6, 64, 'deepseek-v4-pro'),
    (896, 1, 16, 64, 'kimi-k3'), (896, 128, 16, 64, 'kimi-k3'), (896, 2048, 16, 64, 'kimi-k3'),
    (384, 1, 6, 64, 'deepseek-v4-hash'), (384, 4096, 6, 64, 'deepseek-v4-hash'),
    (256, 1, 8, 64, 'deepseek-v3-eplb32'), (256, 4096, 8, 64, 'deepseek-v3-eplb32'),
]


def run(bench, *args):
    return subprocess.run([bench, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)


def expected_names():
    names = []
    for e, m, k, bm in SHAPES:
        name = f'e{e}-m{m}-k{k}-bm{bm}'
        names.append(name)
        if e == 512:
            names.append(name + '-shared')
    names += [f'e{e}-m{m}-k{k}-bm{bm}-{flavour}' for e, m, k, bm, flavour in FLAVOUR_SHAPES]
    return names


def main() -> int:
    bench = sys.argv[1]
    failures = []

    listed = run(bench, '--list')
    if listed.returncode != 0:
        failures.append(f'--list exited {listed.returncode}: {listed.stderr.strip()}')
    rows = re.findall(r'^\s*(\d+)\s+(e\d+-m\d+-k\d+-bm\d+(?:-[a-z0-9-]+)?)\s', listed.stdout, re.M)
    names = [name for _, name in rows]
    if names != expected_names():
        failures.append(f'--list shows {names}, expected {expected_names()}')
    if [int(i) for i, _ in rows] != list(range(len(rows))):
        failures.append('--list indices are not 0, 1, 2, ...')
    if 'stock us (reference)' not in listed.stdout or 'not measured by this program' not in listed.stdout:
        failures.append('--list does not say that the stock figures are a reference not measured by the program')

    for args, why in ((['--shapes', 'e512-m3-k10-bm8'], 'an unknown shape'),
                      (['--shapes', str(len(expected_names()))], 'an index past the table'),
                      (['--shapes', ','], 'an empty list'),
                      (['--rounds', '0'], 'zero rounds'),
                      (['--samples'], 'a missing value'),
                      (['--markdown'], 'a missing file name'),
                      (['--cold-code', '--with-cold-code'], 'both cold-code modes'),
                      (['--sweep', '--with-cold-code'], 'a cold code column in a sweep'),
                      (['--no-such-option'], 'an unknown option')):
        r = run(bench, *args)
        if r.returncode != 2 or not r.stderr.strip():
            failures.append(f'{" ".join(args)} ({why}) exited {r.returncode} with "{r.stderr.strip()[:80]}", '
                            'expected 2 and a message')

    if run(bench, '--help').returncode != 0:
        failures.append('--help did not exit 0')

    # A valid selection: 77 with the reason on a machine without a GPU;
    # where there is one, the short pass must succeed.
    r = run(bench, '--quick', '--shapes', 'e8-m16-k2-bm64,0')
    if r.returncode == 77:
        if 'nothing to measure' not in r.stdout:
            failures.append(f'exit 77 without saying why: "{r.stdout.strip()}"')
    elif r.returncode != 0:
        failures.append(f'--quick --shapes e8-m16-k2-bm64,0 exited {r.returncode}: {r.stderr.strip()[-400:]}')

    for f in failures:
        print('FAIL:', f)
    if not failures:
        print(f'alphamoe-bench command line: {len(names)} shapes listed, mistakes rejected with status 2')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
