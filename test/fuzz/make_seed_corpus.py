#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_host into corpus/: inputs laid out as the
target reads them (see fuzz_host.c), one for each kind of case worth
starting from: valid routings of many shapes with logits of every bit
class, the models' routing flavours, many tokens of few experts, each
parameter raw at its limits, each kind of buffer damage, and extreme
device attributes. Deterministic: rerunning it rewrites the same
files.

    make_seed_corpus.py [OUTPUT_DIR]
"""
import hashlib
import os
import random
import struct
import sys

INT32_MAX = 2**31 - 1


def u32(v): return struct.pack('<I', v & 0xFFFFFFFF)
def u64(v): return struct.pack('<Q', v & 0xFFFFFFFFFFFFFFFF)


def params(raw=0, e=0, k=0, bm=0, max_tokens=0, flags=0, spec=0, stride=0, struct_size=None):
    out = bytes([raw]) + u32(e) + u32(k) + u32(bm) + u32(max_tokens) + u32(flags) + u32(spec) + u64(stride)
    if raw & 128:
        out += bytes([struct_size])
    return out


def flavour(large=0, raw=0, scoring=0, logits_type=0, groups=0, keep=0, scale=0, begin=0, count=0, reserved=0,
            vocab=0, raw2=0, physical=0, slots=0):
    """The token-count mode byte and the flavour block (see fuzz_host.c)."""
    return (bytes([large, raw]) + b''.join(u32(v) for v in (scoring, logits_type, groups, keep, scale, begin, count,
                                                              reserved, vocab)) +
            bytes([raw2]) + u32(physical) + u32(slots))


def folded_replicas(P, R):
    """The folded physical and slots values that read as P physical experts and R replica slots."""
    return P - 1, (R - 1) << 1 | (R > 8 or P < 8)


def folded_groups(g):
    """The folded groups value that reads as g groups (g >= 2, a divisor of E)."""
    return 4 * (g - 1) + 2


def folded_range(count):
    return 3 * (count - 1) + 1


def folded_map(count):
    return 3 * (count - 1) + 2


def select(mode=0, cc=0, sms=131, occ=1, coop=1, size=None, cluster=0):
    out = bytes([mode])
    out += u32(cc) if mode & 1 else bytes([cc])
    out += u32(sms) if mode & 2 else struct.pack('<H', sms)
    out += u32(occ) if mode & 4 else bytes([occ])
    out += u32(coop) if mode & 8 else bytes([coop])
    out += u32(cluster) if mode & 32 else bytes([cluster])
    if mode & 16:
        out += bytes([size])
    return out


def damage(nulls=0, misaligned=0, shorts=0, by=0, extra=b''):
    return struct.pack('<IIBB', nulls, misaligned, shorts, by) + extra


def logit_bytes(rng, kind, n):
    vals = []
    for _ in range(n):
        if kind == 'random':
            vals.append(struct.pack('<f', rng.uniform(-8, 8)))
        elif kind == 'ties':
            vals.append(struct.pack('<f', rng.choice([-1.0, 0.0, 0.5, 1.0])))
        elif kind == 'nan':
            vals.append(u32(rng.choice([0x7FC00000, 0xFFC00001, 0x7F800001, 0xFFBFFFFF])))
        elif kind == 'inf':
            vals.append(u32(rng.choice([0x7F800000, 0xFF800000])))
        elif kind == 'denormal':
            vals.append(u32(rng.randrange(1, 0x800000) | rng.choice([0, 0x80000000])))
        elif kind == 'zeros':
            vals.append(u32(rng.choice([0, 0x80000000])))
        else:
            vals.append(u32(rng.getrandbits(32)))
    return b''.join(vals)


def main() -> int:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus')
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(20261129)
    seeds = []
    kinds = ['random', 'ties', 'nan', 'inf', 'denormal', 'zeros', 'bits']
    plain = flavour()
    # Valid routings: E, k, block_m and max_tokens fold into range.
    shapes = [(511, 9, 7, 64), (63, 5, 15, 40), (7, 1, 0, 17), (0, 0, 0, 1), (255, 15, 255, 64), (1, 1, 2, 33),
              (127, 7, 63, 64), (15, 3, 0, 10), (256, 9, 8, 5), (2, 1, 255, 64)]
    for i, (e, k, bm, mt) in enumerate(shapes):
        for j, kind in enumerate(kinds):
            if (i + j) % 3:
                continue
            flags = [0, 1, 2, 3, 4, 7][(i + j) % 6]
            body = params(0, e, k, bm, mt, flags, (i + j) % 4, rng.randrange(0, 50)) + plain
            body += bytes([0]) + u32(rng.randrange(0, 1000))
            body += select(0, (i + j) % 3, 1 + rng.randrange(300), 1 + (i % 3), 1)
            body += damage(nulls=[0, 0x40, 0x80, 0x100, 0x1C0][(i + j) % 5])
            body += logit_bytes(rng, kind, 64)
            seeds.append(body)
    # The routing flavours, folded into valid values: the models' routers
    # (E, k and block_m fold as E % 2048 + 1, k % min(E, 32) + 1, bm % 256 + 1),
    # each logits type, expert parallelism by range and by map.
    models = [
        # (E-1, k-1, bm-1, flags, flavour)
        (255, 7, 63, 0x10, flavour(scoring=1, groups=folded_groups(8), keep=4, scale=2)),  # DeepSeek-V3
        (383, 7, 15, 0x10, flavour(scoring=1, scale=3)),                                   # Kimi-K2
        (159, 7, 63, 0x12, flavour(scoring=1, scale=2, logits_type=1)),                   # GLM-4.5, bf16
        (59, 3, 15, 0x08, flavour()),                                                      # Qwen2-MoE
        (15, 0, 7, 0x08, flavour(scoring=1)),                                              # Llama-4
        (511, 9, 7, 0x01, flavour(logits_type=2)),                                         # shared, fp16
        (255, 7, 63, 0x10, flavour(scoring=1, groups=folded_groups(8), keep=4, count=folded_map(32))),
        (127, 7, 15, 0x02, flavour(count=folded_range(32), begin=64)),
        (63, 3, 15, 0x00, flavour(groups=folded_groups(64), keep=4)),                      # 64 groups: CPU only
        (63, 3, 15, 0x00, flavour(groups=folded_groups(32), keep=2, scale=7 | (0x3f000000 << 3))),
    ]
    for i, (e, k, bm, flags, flv) in enumerate(models):
        for j, kind in enumerate(kinds):
            if (i + j) % 2:
                continue
            body = params(0, e, k, bm, 30 + i, flags, (i + j) % 4, 0) + flv
            body += bytes([0]) + u32(rng.randrange(0, 1000)) + select(0, 0, 132, 1, 1) + damage()
            body += b''.join(struct.pack('<f', rng.uniform(-0.5, 0.5)) for _ in range(e + 1))  # bias
            body += b''.join(u32(rng.randrange(0, 1 << 32)) for _ in range(e + 1))            # map
            body += logit_bytes(rng, kind, 256)
            seeds.append(body)
    # Large token counts: many tokens of few experts, routed on the CPU.
    for e, k, bm, flags, flv in [(0, 0, 2, 0x2, plain), (3, 1, 15, 0x3, plain), (7, 0, 255, 0, flavour(scoring=1)),
                                 (3, 1, 4, 0x22, flavour(count=folded_map(2))), (1, 0, 0, 0, flavour(logits_type=1))]:
        body = params(0, e, k, bm, 0xFFFFFFFF, flags) + bytes([1]) + flv[1:]
        body += bytes([0]) + u32(0xFFFFFFFF) + select() + damage() + logit_bytes(rng, 'random', 512)
        seeds.append(body)
    # Each flavour field raw at its limits.
    for field, values in [('scoring', [2, -1 & 0xFFFFFFFF, 1]), ('logits_type', [3, 0xFFFFFFFF, 2]),
                          ('groups', [0xFFFFFFFF, 64, 5, 128]), ('scale', [0x7FC00000, 0x7F800000, 0xBF800000, 0x80000000, 0]),
                          ('begin', [0xFFFFFFFF, 60, 1]), ('count', [0xFFFFFFFF, 65, 64, 1]), ('reserved', [1, 0x80000000])]:
        bit = {'scoring': 1, 'logits_type': 2, 'groups': 4, 'scale': 8, 'begin': 16, 'count': 16, 'reserved': 32}[field]
        for v in values:
            kw = {'raw': bit, field: v}
            if field == 'begin':
                kw['count'] = 4
            if field == 'groups':
                kw['keep'] = 2
            for flags in (0, 0x10, 0x20, 0x01):
                seeds.append(params(0, 63, 3, 15, 20, flags) + flavour(**kw) + bytes([0]) + u32(5) + select() +
                             damage() + logit_bytes(rng, 'random', 16))
    # The first version's struct size with flavour fields that must not be read.
    seeds.append(params(128, 63, 3, 15, 20, struct_size=40) + flavour(raw=0x3F, scoring=7, logits_type=9,
                                                                      groups=1000, reserved=5) +
                 bytes([0]) + u32(5) + select() + damage() + logit_bytes(rng, 'random', 16))
    # Each first-version parameter raw at its limits.
    for raw, field in [(1, 'e'), (2, 'k'), (4, 'bm'), (8, 'max'), (16, 'flags'), (32, 'spec'), (64, 'stride')]:
        for v in [0, 1, 0xFFFFFFFF, 0x80000000, INT32_MAX, 513, 17, 257, 0xFFFFFFFFFFFFFFFF, 2**62]:
            kw = dict(raw=raw, e=63, k=3, bm=15, max_tokens=20, flags=0, spec=0, stride=0)
            kw[{'e': 'e', 'k': 'k', 'bm': 'bm', 'max': 'max_tokens', 'flags': 'flags', 'spec': 'spec', 'stride': 'stride'}[field]] = v
            seeds.append(params(**kw) + plain + bytes([0]) + u32(5) + select() + damage() + logit_bytes(rng, 'random', 16))
    seeds.append(params(raw=128, e=63, k=3, bm=15, max_tokens=20, struct_size=7) + logit_bytes(rng, 'bits', 8))
    # Plans at the int32 limits (sized, not routed).
    seeds.append(params(raw=15, e=1, k=1, bm=1, max_tokens=INT32_MAX) + plain + bytes([1]) + u32(INT32_MAX) + select())
    # The large grid forced past its group sums' 2^27 pairs: refused.
    seeds.append(params(raw=15, e=1, k=1, bm=1, max_tokens=INT32_MAX, spec=3) + plain + bytes([1]) + u32(INT32_MAX) +
                 select(0, 0, 132, 1, 1))
    seeds.append(params(raw=15, e=1, k=1, bm=2, max_tokens=INT32_MAX) + plain)
    seeds.append(params(raw=15, e=512, k=16, bm=256, max_tokens=INT32_MAX // 16) + plain)
    seeds.append(params(raw=15 | 64, e=512, k=16, bm=256, max_tokens=1000, stride=2**61) + plain)
    # A capacity that fits int32 only over few local experts.
    seeds.append(params(raw=15, e=512, k=1, bm=256, max_tokens=INT32_MAX - 300) + flavour(count=folded_range(1)))
    # Redundant experts (flag 0x80): P and R folded, the replica tables and
    # the load drawn from the bytes after the hash inputs (see fuzz_host.c).
    def redundant(e, k, bm, mt, flags, P, R, load_mode=0, **flv):
        phys, slots = folded_replicas(P, R)
        vocab = flv.get('vocab', 0)
        body = params(0, e - 1, k - 1, bm - 1, mt, flags | 0x80) + flavour(physical=phys, slots=slots, **flv)
        body += bytes([0]) + u32(mt) + select(0, 0, 132, 1, 1) + damage()
        body += b''.join(struct.pack('<f', rng.uniform(-0.5, 0.5)) for _ in range(e))  # bias
        body += b''.join(u32(rng.randrange(0, 1 << 32)) for _ in range(P))            # map over P
        rows, table_rows = max(mt, 1), (vocab % 300 + 1 if flags & 0x40 else 1)
        body += b''.join(u32(rng.randrange(0, 1 << 32)) for _ in range(rows))         # token ids
        body += bytes(rng.getrandbits(8) for _ in range(2 * table_rows * k))           # hash table
        body += bytes(rng.getrandbits(8) for _ in range(2 * e + 2 * e * R))            # counts, replicas
        body += bytes([load_mode]) + b''.join(u32(rng.choice([0, 7, INT32_MAX, 0xFFFFFFFF, rng.getrandbits(32)]))
                                              for _ in range(P))                        # load
        return body + logit_bytes(rng, 'random', rows * e)
    seeds += [
        redundant(64, 6, 16, 40, 0, 64, 1),                                        # static dispatch, R 1
        redundant(64, 8, 8, 60, 0, 96, 4),                                         # P > E
        redundant(128, 8, 4, 30, 0x2, 40, 3, load_mode=3),                         # P < E, tail, no load
        redundant(32, 4, 2, 50, 0, 72, 5, begin=40, count=folded_range(24)),       # a local range over P
        redundant(48, 6, 16, 40, 0x20, 100, 4, count=folded_map(30)),              # a map over P
        redundant(40, 4, 8, 36, 0x40, 56, 2, scoring=2, vocab=49),                 # hash routing
        redundant(33, 4, 4, 44, 0x1, 45, 6),                                       # shared expert
        redundant(256, 8, 16, 24, 0x10, 288, 2, scoring=1, groups=folded_groups(8), keep=4),
        redundant(16, 3, 1, 30, 0x28, 20, 20, count=folded_map(7)),               # R = P > 8
        redundant(8, 2, 5, 20, 0, 1, 1),                                           # one physical expert
        redundant(64, 8, 8, 0, 0x2, 96, 4),                                        # M = 0
    ]
    # P and R raw: 0, past 2048, R past P, and either beside no flag.
    for flags in (0, 0x80):
        for phys, slots in [(0, 0), (1, 0), (0, 1), (2049, 1), (8, 9), (0xFFFFFFFF, 1), (2048, 2048), (5, 0xFFFFFFFF)]:
            seeds.append(params(0, 63, 3, 15, 20, flags) + flavour(raw2=1, physical=phys, slots=slots) + bytes([0]) +
                         u32(5) + select() + damage() + logit_bytes(rng, 'random', 64))
    # Buffer damage, one kind at a time, on a valid shape (the bias and the
    # map are buffers 10 and 11, the replica tables and the load 14 to 16).
    sigmoid_map = flavour(scoring=1, count=folded_map(16))
    for nulls in [1 << f for f in range(12)]:
        seeds.append(params(0, 63, 3, 15, 30, 0x30) + sigmoid_map + bytes([0]) + u32(7) + select() +
                     damage(nulls=nulls) + logit_bytes(rng, 'random', 8))
    replicated = flavour(physical=79, slots=6)
    for f in range(14, 17):
        for mis in (0, 1 << f):
            seeds.append(params(0, 63, 3, 15, 30, 0x80) + replicated + bytes([0]) + u32(7) + select() +
                         damage(nulls=(1 << f) * (mis == 0), misaligned=mis, by=f) + logit_bytes(rng, 'random', 64))
    for mis in [1 << f for f in range(12)]:
        for by in (0, 1, 2):
            seeds.append(params(0, 63, 3, 15, 30, 0x30) + sigmoid_map + bytes([0]) + u32(7) + select() +
                         damage(misaligned=mis, by=by) + logit_bytes(rng, 'random', 8))
    for shorts, extra in [(1, b'\x00'), (2, b'\x00'), (4, b'\x00'), (8, b'\x03'), (8, b'\x60'), (16, u64(-1)),
                          (32, u64(2**63)), (0x40, b''), (0x80, b'')]:
        mode = 6 if shorts & 0xC0 else 0
        seeds.append(params(0, 63, 3, 15, 30) + plain + bytes([mode]) + u32(7) + select() +
                     damage(shorts=shorts) + bytes(64 * 8) + extra + logit_bytes(rng, 'random', 8))
    # Token counts out of range.
    for m in [0xFFFFFFFF, 31, 0x80000000, INT32_MAX]:
        seeds.append(params(0, 63, 3, 15, 30) + plain + bytes([1]) + u32(m) + select() + damage())
    # Device attributes at their limits.
    for mode, cc, sms, occ, coop in [(7, 90, 65536, 65536, 1), (7, 90, INT32_MAX, INT32_MAX, 1), (6, 0, 0, 0xFFFFFFFF, 1),
                                     (1, 0xFFFFFFFF, 10, 1, 1), (8, 0, 132, 2, 0xFFFFFFFF), (16, 0, 132, 1, 1)]:
        seeds.append(params(0, 511, 9, 7, 64, 0, 2) + plain + bytes([0]) + u32(600) + select(mode, cc, sms, occ, coop, 5) +
                     damage())
    # Both published sizes of the attributes (0.2's ends before max_cluster_ctas), and clusters at their limits.
    for size, cluster in [(24, 16), (32, 0xFFFFFFFF), (32, 16), (32, 1), (32, 0x80000000)]:
        seeds.append(params(0, 63, 3, 15, 64, 0, 1) + plain + bytes([0]) + u32(40) +
                     select(16 | 32, 0, 132, 1, 1, size, cluster) + damage())
    for name in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, name))
    for s in seeds:
        with open(os.path.join(out_dir, hashlib.sha1(s).hexdigest()), 'wb') as f:
            f.write(s)
    print(f'{len(seeds)} seeds in {out_dir}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
