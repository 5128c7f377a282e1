#!/usr/bin/env python3
"""bench/doc_tables.py: a document's alphamoe-bench blocks are replaced by
the benchmark file's blocks of the same names, the text around them is
kept byte for byte, and a block the benchmark file lacks fails the run and
leaves every document as it was.

    check_doc_tables.py DOC_TABLES_PY
"""
import os
import subprocess
import sys
import tempfile

BENCH = ('<!-- header -->\n<!-- alphamoe-bench:headline -->\n| shape | kernel us |\n|---|---|\n| e8 | 1.00 |\n'
         '<!-- /alphamoe-bench:headline -->\n\n<!-- alphamoe-bench:floors -->\n| floor | us |\n|---|---|\n'
         '| row | 0.50 |\n<!-- /alphamoe-bench:floors -->\n')
DOC = ('# Title\n\nText before.\n\n<!-- alphamoe-bench:headline -->\n| old | table |\n|---|---|\n'
       '<!-- /alphamoe-bench:headline -->\n\nBetween.\n<!-- alphamoe-bench:floors -->\nstale\n'
       '<!-- /alphamoe-bench:floors -->\nAfter.\n')
WANT = ('# Title\n\nText before.\n\n<!-- alphamoe-bench:headline -->\n| shape | kernel us |\n|---|---|\n'
        '| e8 | 1.00 |\n<!-- /alphamoe-bench:headline -->\n\nBetween.\n<!-- alphamoe-bench:floors -->\n'
        '| floor | us |\n|---|---|\n| row | 0.50 |\n<!-- /alphamoe-bench:floors -->\nAfter.\n')
UNKNOWN = 'x\n<!-- alphamoe-bench:sweep -->\nold\n<!-- /alphamoe-bench:sweep -->\n'


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


def main() -> int:
    script = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        bench, doc, other = (os.path.join(tmp, n) for n in ('bench.md', 'doc.md', 'other.md'))
        write(bench, BENCH)
        write(doc, DOC)
        r = subprocess.run([sys.executable, script, bench, doc], capture_output=True, text=True)
        if r.returncode != 0 or read(doc) != WANT:
            failures.append(f'exit {r.returncode}, document now:\n{read(doc)}\nexpected:\n{WANT}{r.stderr}')
        write(doc, DOC)
        write(other, UNKNOWN)
        r = subprocess.run([sys.executable, script, bench, doc, other], capture_output=True, text=True)
        if r.returncode != 1 or 'sweep' not in r.stderr:
            failures.append(f'a block missing from the benchmark file: exit {r.returncode}, stderr "{r.stderr}"')
        if read(doc) != DOC or read(other) != UNKNOWN:
            failures.append('a block missing from the benchmark file, yet the documents changed')
    for f in failures:
        print('FAIL:', f)
    if not failures:
        print('doc_tables.py: blocks replaced, surrounding text kept, a missing block refused')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
