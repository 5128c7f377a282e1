"""The routing contract (docs/contract.md) computed here,
independently of the library, and compared with what a call wrote."""
import math
import os
import struct
import sys
import time

import alphamoe_router as amr

POISON = 0x5A5A5A5A
POISON_WEIGHT = struct.unpack('<f', struct.pack('<I', POISON))[0]


def rank_key(row, expert):
    """Sort key: higher logit first, equal logits (-0.0 == +0.0) by lower
    id, NaN after every number."""
    x = row[expert]
    return (1, 0.0, expert) if math.isnan(x) else (0, -x, expert)


def expected_ids(row, top_k, shared):
    routed = len(row) - 1 if shared else len(row)
    order = sorted(range(routed), key=lambda e: rank_key(row, e))
    return order[:top_k - 1] + [len(row) - 1] if shared else order[:top_k]


def expected_weights(chosen):
    """Softmax over the chosen logits in float64; NaN weighs 0, +inf ones
    share 1, all -inf/NaN give 0."""
    pos_inf = sum(1 for x in chosen if x == math.inf)
    if pos_inf:
        return [1.0 / pos_inf if x == math.inf else 0.0 for x in chosen]
    finite = [x for x in chosen if math.isfinite(x)]
    if not finite:
        return [0.0] * len(chosen)
    m = max(finite)
    total = sum(math.exp(x - m) for x in finite)
    return [math.exp(x - m) / total if math.isfinite(x) else 0.0 for x in chosen]


def expected_capacity(num_experts, top_k, block_m, max_tokens):
    """blocks = min(E, P) + floor((P - min(E, P)) / block_m), capacity = blocks * block_m."""
    pairs = max_tokens * top_k
    first = min(num_experts, pairs)
    return (first + (pairs - first) // block_m) * block_m


def flavour_expectation(params, m, logits, bias=None):
    """(ids, weights), flat [M * k], of any flavour but the shared expert,
    in float64: for logits far enough apart that fp32 rounding cannot
    reorder them (the tests draw such logits)."""
    e, k, stride = params['num_experts'], params['top_k'], params.get('logits_row_stride') or params['num_experts']
    scoring = int(params.get('scoring', 0))
    sigmoid = scoring != 0  # a score per expert: sigmoid (1) or sqrt-softplus (2)
    renormalize = not params.get('flags', 0) & amr.FLAG_NO_RENORMALIZE
    groups, kept = params.get('num_groups') or 1, params.get('topk_groups') or params.get('num_groups') or 1
    scale = params.get('routed_scaling_factor') or 1.0
    ids, weights = [], []
    for t in range(m):
        row = logits[t * stride:t * stride + e]
        score = ([1 / (1 + math.exp(-x)) for x in row] if scoring == 1 else
                 [math.sqrt(math.log1p(math.exp(x))) for x in row] if scoring == 2 else None)
        key = [score[x] + bias[x] for x in range(e)] if bias is not None else row
        candidates = list(range(e))
        if groups > 1:
            size = e // groups

            def group_score(g):
                best = sorted((key[x] for x in range(g * size, (g + 1) * size)), reverse=True)
                return best[0] + best[1] if bias is not None and size > 1 else best[0]
            chosen_groups = sorted(range(groups), key=lambda g: (-group_score(g), g))[:kept]
            candidates = [x for g in sorted(chosen_groups) for x in range(g * size, (g + 1) * size)]
        chosen = sorted(candidates, key=lambda x: (-key[x], x))[:k]
        if sigmoid:
            w = [score[x] for x in chosen]
            total = sum(w) if renormalize else 1.0
        else:
            top = max(row) if not renormalize else max(row[x] for x in chosen)
            w = [math.exp(row[x] - top) for x in chosen]
            total = sum(w) if renormalize else sum(math.exp(x - top) for x in row)
        ids += chosen
        weights += [x / total * scale for x in w]
    return ids, weights


def local_ids(params, expert_map=None):
    """Each global expert's local id (-1: another rank's), and L."""
    e, flags = params['num_experts'], params.get('flags', 0)
    count = params.get('local_expert_count') or e
    if flags & amr.FLAG_EXPERT_MAP:
        return [x if 0 <= x < count else -1 for x in expert_map], count
    begin = params.get('local_expert_begin') or 0
    return [g - begin if begin <= g < begin + count else -1 for g in range(e)], count


def check(params, m, logits, out, poison=POISON, expected=None, expert_map=None):
    """Returns None when `out` (a dict of one call's outputs, flat lists,
    whole buffers for sorted_token_ids and expert_ids) follows the contract,
    else why not. expected: (ids, weights) of a flavour (flavour_expectation),
    else the first version's softmax is computed here."""
    e, k, bm = params['num_experts'], params['top_k'], params['block_m']
    stride = params.get('logits_row_stride') or e
    shared = bool(params.get('flags', 0) & amr.FLAG_SHARED_EXPERT)
    tolerance = 4e-6 * max(1.0, params.get('routed_scaling_factor') or 1.0)
    sentinel = m * k
    ids, weights = out['topk_ids'], out['topk_weights']
    for t in range(m):
        if expected is None:
            row = logits[t * stride:t * stride + e]
            want = expected_ids(row, k, shared)
            want_weights = expected_weights([row[x] for x in want])
        else:
            want, want_weights = expected[0][t * k:(t + 1) * k], expected[1][t * k:(t + 1) * k]
        if list(ids[t * k:(t + 1) * k]) != want:
            return f'token {t}: topk_ids {list(ids[t * k:(t + 1) * k])}, the contract ranks {want}'
        for j, w in enumerate(want_weights):
            if not abs(weights[t * k + j] - w) <= tolerance:
                return f'token {t} slot {j}: weight {weights[t * k + j]} but the contract gives {w} (tolerance {tolerance})'
    local, count = local_ids(params, expert_map)
    sorted_ids, blocks, counts, offsets = [], [], [0] * count, [0] * (count + 1)
    for expert in range(count):
        offsets[expert] = len(sorted_ids)
        group = [p for p in range(m * k) if local[ids[p]] == expert]
        counts[expert] = len(group)
        sorted_ids += group + [sentinel] * (-len(group) % bm)
        blocks += [expert] * (len(sorted_ids) // bm - len(blocks))
    offsets[count] = live = len(sorted_ids)
    if out['num_tokens_post_padded'] != live:
        return f'num_tokens_post_padded {out["num_tokens_post_padded"]} but the groups take {live}'
    if list(out['sorted_token_ids'][:live]) != sorted_ids:
        return f'sorted_token_ids differ from the grouped pairs (live length {live})'
    if list(out['expert_ids'][:len(blocks)]) != blocks:
        return f'expert_ids differ from the experts of the {len(blocks)} blocks'
    if out.get('expert_counts') is not None and list(out['expert_counts']) != counts:
        return f'expert_counts {list(out["expert_counts"])}, pairs per expert {counts}'
    if out.get('expert_offsets') is not None and list(out['expert_offsets']) != offsets:
        return f'expert_offsets {list(out["expert_offsets"])}, group starts {offsets}'
    if out.get('pair_to_sorted') is not None:
        where = {pair: pos for pos, pair in enumerate(sorted_ids) if pair != sentinel}
        for pair in range(m * k):
            if out['pair_to_sorted'][pair] != where.get(pair, -1):
                return f'pair_to_sorted[{pair}] = {out["pair_to_sorted"][pair]}, the pair sits at {where.get(pair, -1)}'
    if poison is not None:
        for name, start in (('sorted_token_ids', live), ('expert_ids', len(blocks))):
            tail = list(out[name][start:])
            if any(x != poison for x in tail):
                return f'{name} past the live part (from {start}) was written'
    return None


def separated_logits(rng, m, e):
    """Rows of distinct values at least 1/16 apart (a random permutation of
    a spread), so no rounding can reorder experts or groups."""
    rows = []
    for _ in range(m):
        values = [(i - e / 2) / 16 * (1 + (e > 64)) for i in range(e)]
        for i in range(e - 1, 0, -1):
            j = rng.next() % (i + 1)
            values[i], values[j] = values[j], values[i]
        rows += values
    return rows


class Rng:
    """splitmix64, reproducible from the printed seed."""

    def __init__(self, seed):
        self.state = seed & (2**64 - 1)

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        return z ^ (z >> 31)

    def uniform(self, lo, hi):
        return lo + (hi - lo) * ((self.next() >> 40) / float(1 << 24))


def seed(test):
    """$ALPHAMOE_TEST_SEED, else the clock; printed so a failure replays."""
    value = int(os.environ.get('ALPHAMOE_TEST_SEED') or time.time_ns())
    print(f'{test}: seed {value} (ALPHAMOE_TEST_SEED={value} replays it)')
    return value


def to_float32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def random_logits(rng, m, e):
    """float32 values: most rows uniform in [-8, 8), some with heavy ties
    (-0.0 and +0.0 among them), some mixing NaN and infinities."""
    logits = []
    for _ in range(m):
        kind = rng.next() % 8
        for _ in range(e):
            if kind == 0:
                x = (-0.0, 0.0, 1.0, -1.0)[rng.next() % 4]
            elif kind == 1 and rng.next() % 2 == 0:
                x = (math.nan, math.inf, -math.inf)[rng.next() % 3]
            else:
                x = to_float32(rng.uniform(-8.0, 8.0))
            logits.append(x)
    return logits


SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')


def gen_abi():
    """packaging/python/gen_abi.py, which reads the headers."""
    sys.path.insert(0, os.path.join(SOURCE, 'packaging', 'python'))
    try:
        import gen_abi as module
    finally:
        sys.path.pop(0)
    return module


def header_enums():
    """{C enum name: [(member, value)]} of the source tree's headers."""
    g = gen_abi()
    return dict(g.parse(g.read_headers(os.path.join(SOURCE, 'include')))['enums'])
