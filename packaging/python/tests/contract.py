"""The routing contract (docs/contract.md) computed here,
independently of the library, and compared with what a call wrote."""
import math
import os
import struct
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


def check(params, m, logits, out, poison=POISON):
    """Returns None when `out` (a dict of one call's outputs, whole buffers
    for sorted_token_ids and expert_ids) follows the contract, else why not."""
    e, k, bm = params['num_experts'], params['top_k'], params['block_m']
    stride = params.get('logits_row_stride') or e
    shared = bool(params.get('flags', 0) & amr.FLAG_SHARED_EXPERT)
    sentinel = m * k
    ids, weights = out['topk_ids'], out['topk_weights']
    for t in range(m):
        row = logits[t * stride:t * stride + e]
        want = expected_ids(row, k, shared)
        if list(ids[t * k:(t + 1) * k]) != want:
            return f'token {t}: topk_ids {list(ids[t * k:(t + 1) * k])}, the contract ranks {want}'
        for j, w in enumerate(expected_weights([row[x] for x in want])):
            if not abs(weights[t * k + j] - w) <= 4e-6:
                return f'token {t} slot {j}: weight {weights[t * k + j]} but softmax gives {w} (tolerance 4e-6)'
    sorted_ids, blocks, counts, offsets = [], [], [0] * e, [0] * (e + 1)
    for expert in range(e):
        offsets[expert] = len(sorted_ids)
        group = [p for p in range(m * k) if ids[p] == expert]
        counts[expert] = len(group)
        sorted_ids += group + [sentinel] * (-len(group) % bm)
        blocks += [expert] * (len(sorted_ids) // bm - len(blocks))
    offsets[e] = live = len(sorted_ids)
    if out['num_tokens_post_padded'] != live:
        return f'num_tokens_post_padded {out["num_tokens_post_padded"]} but the groups take {live}'
    if list(out['sorted_token_ids'][:live]) != sorted_ids:
        return f'sorted_token_ids differ from the grouped pairs (live length {live})'
    if list(out['expert_ids'][:len(blocks)]) != blocks:
        return f'expert_ids differ from the experts of the {len(blocks)} blocks'
    if list(out['expert_counts']) != counts:
        return f'expert_counts {list(out["expert_counts"])}, pairs per expert {counts}'
    if list(out['expert_offsets']) != offsets:
        return f'expert_offsets {list(out["expert_offsets"])}, group starts {offsets}'
    for pos, pair in enumerate(sorted_ids):
        if pair != sentinel and out['pair_to_sorted'][pair] != pos:
            return f'pair_to_sorted[{pair}] = {out["pair_to_sorted"][pair]}, the pair sits at {pos}'
    if poison is not None:
        for name, start in (('sorted_token_ids', live), ('expert_ids', len(blocks))):
            tail = list(out[name][start:])
            if any(x != poison for x in tail):
                return f'{name} past the live part (from {start}) was written'
    return None


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
