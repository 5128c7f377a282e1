#!/usr/bin/env python3
"""alphamoe-route's model presets, on the host reference (no GPU needed):
every preset routes and names its flavour, and the llama4 preset is
Llama-4's router exactly: for logits read from a file, each token's expert
is the largest logit (lower id on ties) and its weight sigmoid(logit).

    check_cli_presets.py ALPHAMOE_ROUTE
"""
import math
import os
import random
import subprocess
import sys
import tempfile

from npy_files import f32, read_npy, write_npy_f32

PRESETS = {
    # name: (E, k, words the routing line must hold)
    'qwen3-next': (512, 10, ['softmax', 'renormalized']),
    'qwen3-moe': (128, 8, ['softmax', 'renormalized']),
    'deepseek-v3': (256, 8, ['sigmoid with a random correction bias', '8 groups keep 4', 'scaled by 2.5']),
    'kimi-k2': (384, 8, ['sigmoid with a random correction bias', 'scaled by 2.827']),
    'kimi-k3': (896, 16, ['sigmoid with a random correction bias', 'renormalized']),
    'glm-4.5': (160, 8, ['sigmoid with a random correction bias', 'scaled by 2.5']),
    'deepseek-v4-flash': (256, 6, ['sqrt-softplus with a random correction bias', 'renormalized', 'scaled by 1.5']),
    'deepseek-v4-pro': (384, 6, ['sqrt-softplus with a random correction bias', 'renormalized', 'scaled by 2.5']),
    'deepseek-v4-hash': (384, 6, ['sqrt-softplus', 'renormalized', 'scaled by 2.5']),
    'qwen2-moe': (60, 4, ['softmax', 'full-row probabilities']),
    'llama4': (16, 1, ['sigmoid', 'weights sigmoid(logit)']),
    'mixtral': (8, 2, ['softmax', 'renormalized']),
}


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def main() -> int:
    exe = sys.argv[1]
    failures = []
    for name, (E, k, words) in PRESETS.items():
        rc, out = run([exe, '--preset', name, '--host', '--tokens', '300', '--repeat', '1'])
        shape = '%d experts, top-k %d' % (E, k)
        routing = next((l for l in out.splitlines() if l.startswith('routing:')), '')
        if rc != 0 or shape not in out or not all(w in routing for w in words):
            failures.append('preset %s: rc %d, want "%s" and %s in its output:\n%s' % (name, rc, shape, words, out))

    rng = random.Random(int(os.environ.get('ALPHAMOE_TEST_SEED', '0'), 0) or None)
    M, E = 500, 16
    rows = []
    for _ in range(M):
        row = [rng.choice([rng.uniform(-30, 30), float(rng.randint(-3, 3))]) for _ in range(E)]
        rows.append([f32(v) for v in row])
    with tempfile.TemporaryDirectory() as tmp:
        logits = os.path.join(tmp, 'logits.npy')
        write_npy_f32(logits, rows)
        outdir = os.path.join(tmp, 'out')
        rc, out = run([exe, '--preset', 'llama4', '--host', '--input', logits, '--output', outdir, '--repeat', '1'])
        if rc != 0:
            failures.append('llama4 on %s: rc %d\n%s' % (logits, rc, out))
        else:
            ids = read_npy(os.path.join(outdir, 'topk_ids.npy'))
            weights = read_npy(os.path.join(outdir, 'topk_weights.npy'))
            for t, row in enumerate(rows):
                best = max(range(E), key=lambda e: (row[e], -e))
                want = 1.0 / (1.0 + math.exp(-row[best]))
                if ids[t] != best or abs(weights[t] - want) > 4e-6:
                    failures.append('llama4 token %d: expert %d weight %.9g, Llama-4 gives expert %d weight %.9g'
                                    % (t, ids[t], weights[t], best, want))
                    break
    for f in failures:
        print('FAIL:', f)
    print('%d presets routed; llama4 checked on %d tokens' % (len(PRESETS), M))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
