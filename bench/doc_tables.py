#!/usr/bin/env python3
"""Puts the tables of an alphamoe-bench --markdown file into documents.

    doc_tables.py BENCH.md[,BENCH.md ...] DOC.md [DOC.md ...]

Each block of a document between <!-- alphamoe-bench:NAME --> and
<!-- /alphamoe-bench:NAME --> is replaced by the block of the same NAME in
the benchmark files (a later file's block over an earlier one's: the
shape table of one run, the entry points of an --entries run), so the
documentation's tables are regenerated, never edited by hand. A NAME no
benchmark file has is an error and changes nothing.
"""
import re
import sys

BLOCK = re.compile(r'<!-- alphamoe-bench:([a-z]+) -->\n(.*?)<!-- /alphamoe-bench:\1 -->\n', re.S)


def blocks(text):
    return {m.group(1): m.group(2) for m in BLOCK.finditer(text)}


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tables = {}
    for bench in sys.argv[1].split(','):
        with open(bench) as f:
            tables.update(blocks(f.read()))
    updated = {}
    for path in sys.argv[2:]:
        with open(path) as f:
            text = f.read()
        missing = sorted(set(blocks(text)) - set(tables))
        if missing:
            print(f'{path}: {sys.argv[1]} has no table {", ".join(missing)}', file=sys.stderr)
            return 1
        updated[path] = BLOCK.sub(lambda m: f'<!-- alphamoe-bench:{m.group(1)} -->\n{tables[m.group(1)]}'
                                            f'<!-- /alphamoe-bench:{m.group(1)} -->\n', text)
    for path, text in updated.items():
        with open(path, 'w') as f:
            f.write(text)
        print(f'{path}: {len(blocks(text))} table(s) from {sys.argv[1]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
