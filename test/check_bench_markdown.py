#!/usr/bin/env python3
"""alphamoe-bench --markdown on a GPU machine: a short pass over a plain
shape (with its dependent-launch pair) and a flavoured one, with the cold
code column, written as Markdown and as JSON in the same run. Every table
must be well formed and hold the JSON's figures; the header must name the
GPU and the commit; the stock columns must be there exactly on the GPU the
stock figures were measured on. Without a GPU the benchmark exits 77, and
so does this check.

    check_bench_markdown.py ALPHAMOE_BENCH
"""
import json
import os
import re
import subprocess
import sys
import tempfile

SHAPES = 'e512-m1-k10-bm8,e256-m1-k8-bm64-deepseek-v3'
BLOCK = re.compile(r'<!-- alphamoe-bench:([a-z]+) -->\n(.*?)<!-- /alphamoe-bench:\1 -->\n', re.S)


def table(text):
    """The first Markdown table of a block: its titles and rows of cells."""
    lines = [l for l in text.splitlines() if l.startswith('|')]
    cells = [[c.strip() for c in l.strip().strip('|').split('|')] for l in lines]
    return (cells[0], cells[2:], cells[1]) if len(cells) >= 2 else ([], [], [])


def main() -> int:
    bench = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        md, js = os.path.join(tmp, 'bench.md'), os.path.join(tmp, 'bench.json')
        env = dict(os.environ, ALPHAMOE_COMMIT='c0ffee1')
        r = subprocess.run([bench, '--quick', '--with-cold-code', '--shapes', SHAPES, '--markdown', md, '--json', js],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
        if r.returncode == 77:
            print(r.stdout.strip())
            return 77
        if r.returncode != 0:
            print(f'FAIL: the benchmark exited {r.returncode}:\n{r.stdout[-2000:]}')
            return 1
        with open(md) as f:
            text = f.read()
        with open(js) as f:
            run = json.load(f)

    blocks = dict(BLOCK.findall(text))
    for name in ('header', 'headline', 'floors', 'shapes', 'flavours', 'pdl'):
        if name not in blocks:
            failures.append(f'no {name} block')
    device = run['device']['name']
    header = blocks.get('header', '')
    for words in (device, 'commit c0ffee1', f"{run['device']['multiprocessors']} SMs", 'CUDA driver',
                  run['library_version']):
        if words not in header:
            failures.append(f'the header does not say "{words}": {header!r}')

    for name, body in blocks.items():
        titles, rows, rule = table(body)
        if name == 'header':
            continue
        if not titles or any(c != '---' for c in rule) or len(rule) != len(titles):
            failures.append(f'{name}: no well-formed table')
        for row in rows:
            if len(row) != len(titles):
                failures.append(f'{name}: row {row} has {len(row)} cells for {len(titles)} titles')

    stock_here = device == run['stock_reference']['gpu']
    figures = {s['name']: s for s in run['shapes']}
    for name in ('shapes', 'flavours', 'headline'):
        titles, rows, _ = table(blocks.get(name, ''))
        stock = [t for t in titles if 'stock' in t]
        if name != 'flavours' and stock_here != bool(stock):
            failures.append(f'{name}: stock columns {stock} on {device}')
        if stock and not all(run['stock_reference']['gpu'] in t and 'not in this run' in t for t in stock[:1]):
            failures.append(f'{name}: the stock column does not say it is a reference from another run: {stock}')
        for row in rows:
            cell = dict(zip(titles, row))
            s = figures.get(cell.get('shape'))
            if s is None:
                failures.append(f'{name}: shape {cell.get("shape")} is not in the JSON')
                continue
            for title, value in (('kernel us', s['kernel']['median_us']), ('cold code us', s['cold_code']['median_us']),
                                 ('graph/call us', s['graph_per_call_us'])):
                if cell.get(title) != f'{value:.2f}':
                    failures.append(f'{name}: {s["name"]} {title} is {cell.get(title)}, the JSON says {value:.2f}')
    if not stock_here and any(s['stock_us'] is not None for s in run['shapes']):
        failures.append(f'the JSON gives stock figures on {device}')

    for f in failures:
        print('FAIL:', f)
    if not failures:
        print(f'alphamoe-bench --markdown on {device}: {len(blocks)} blocks, figures as in the JSON, '
              f'stock columns {"shown" if stock_here else "left out"}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
