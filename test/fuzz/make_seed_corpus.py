#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_host into corpus/: inputs laid out as the
target reads them (see fuzz_host.c), one for each kind of case worth
starting from: valid routings of many shapes with logits of every bit
class, each parameter raw at its limits, each kind of buffer damage, and
extreme device attributes. Deterministic: rerunning it rewrites the same
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


def select(mode=0, cc=0, sms=131, occ=1, coop=1, size=None):
    out = bytes([mode])
    out += u32(cc) if mode & 1 else bytes([cc])
    out += u32(sms) if mode & 2 else struct.pack('<H', sms)
    out += u32(occ) if mode & 4 else bytes([occ])
    out += u32(coop) if mode & 8 else bytes([coop])
    if mode & 16:
        out += bytes([size])
    return out


def damage(nulls=0, misaligned=0, shorts=0, by=0, extra=b''):
    return struct.pack('<HHBB', nulls, misaligned, shorts, by) + extra


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
    # Valid routings: E, k, block_m and max_tokens fold into range.
    shapes = [(511, 9, 7, 64), (63, 5, 15, 40), (7, 1, 0, 17), (0, 0, 0, 1), (255, 15, 255, 64), (1, 1, 2, 33),
              (127, 7, 63, 64), (15, 3, 0, 10), (256, 9, 8, 5), (2, 1, 255, 64)]
    for i, (e, k, bm, mt) in enumerate(shapes):
        for j, kind in enumerate(kinds):
            if (i + j) % 3:
                continue
            flags = [0, 1, 2, 3, 4, 7][(i + j) % 6]
            body = params(0, e, k, bm, mt, flags, (i + j) % 4, rng.randrange(0, 50))
            body += bytes([0]) + u32(rng.randrange(0, 1000))
            body += select(0, (i + j) % 3, 1 + rng.randrange(300), 1 + (i % 3), 1)
            body += damage(nulls=[0, 0x40, 0x80, 0x100, 0x1C0][(i + j) % 5])
            body += logit_bytes(rng, kind, 64)
            seeds.append(body)
    # Each parameter raw at its limits.
    for raw, field in [(1, 'e'), (2, 'k'), (4, 'bm'), (8, 'max'), (16, 'flags'), (32, 'spec'), (64, 'stride')]:
        for v in [0, 1, 0xFFFFFFFF, 0x80000000, INT32_MAX, 513, 17, 257, 0xFFFFFFFFFFFFFFFF, 2**62]:
            kw = dict(raw=raw, e=63, k=3, bm=15, max_tokens=20, flags=0, spec=0, stride=0)
            kw[{'e': 'e', 'k': 'k', 'bm': 'bm', 'max': 'max_tokens', 'flags': 'flags', 'spec': 'spec', 'stride': 'stride'}[field]] = v
            seeds.append(params(**kw) + bytes([0]) + u32(5) + select() + damage() + logit_bytes(rng, 'random', 16))
    seeds.append(params(raw=128, e=63, k=3, bm=15, max_tokens=20, struct_size=7) + logit_bytes(rng, 'bits', 8))
    # Plans at the int32 limits (sized, not routed).
    seeds.append(params(raw=15, e=1, k=1, bm=1, max_tokens=INT32_MAX) + bytes([1]) + u32(INT32_MAX) + select())
    # The large grid forced past its group sums' 2^27 pairs: refused.
    seeds.append(params(raw=15, e=1, k=1, bm=1, max_tokens=INT32_MAX, spec=3) + bytes([1]) + u32(INT32_MAX) +
                 select(0, 0, 132, 1, 1))
    seeds.append(params(raw=15, e=1, k=1, bm=2, max_tokens=INT32_MAX))
    seeds.append(params(raw=15, e=512, k=16, bm=256, max_tokens=INT32_MAX // 16))
    seeds.append(params(raw=15 | 64, e=512, k=16, bm=256, max_tokens=1000, stride=2**61))
    # Buffer damage, one kind at a time, on a valid shape.
    for nulls in [1 << f for f in range(10)]:
        seeds.append(params(0, 63, 3, 15, 30) + bytes([0]) + u32(7) + select() + damage(nulls=nulls) + logit_bytes(rng, 'random', 8))
    for mis in [1 << f for f in range(10)]:
        for by in (0, 1, 2):
            seeds.append(params(0, 63, 3, 15, 30) + bytes([0]) + u32(7) + select() + damage(misaligned=mis, by=by) + logit_bytes(rng, 'random', 8))
    for shorts, extra in [(1, b'\x00'), (2, b'\x00'), (4, b'\x00'), (8, b'\x03'), (16, u64(-1)), (32, u64(2**63)), (0x40, b''), (0x80, b'')]:
        mode = 6 if shorts & 0xC0 else 0
        seeds.append(params(0, 63, 3, 15, 30) + bytes([mode]) + u32(7) + select() + damage(shorts=shorts, extra=extra) + logit_bytes(rng, 'random', 8))
    # Token counts out of range.
    for m in [0xFFFFFFFF, 31, 0x80000000, INT32_MAX]:
        seeds.append(params(0, 63, 3, 15, 30) + bytes([1]) + u32(m) + select() + damage())
    # Device attributes at their limits.
    for mode, cc, sms, occ, coop in [(7, 90, 65536, 65536, 1), (7, 90, INT32_MAX, INT32_MAX, 1), (6, 0, 0, 0xFFFFFFFF, 1),
                                     (1, 0xFFFFFFFF, 10, 1, 1), (8, 0, 132, 2, 0xFFFFFFFF), (16, 0, 132, 1, 1)]:
        seeds.append(params(0, 511, 9, 7, 64, 0, 2) + bytes([0]) + u32(600) + select(mode, cc, sms, occ, coop, 5) + damage())
    for name in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, name))
    for s in seeds:
        with open(os.path.join(out_dir, hashlib.sha1(s).hexdigest()), 'wb') as f:
            f.write(s)
    print(f'{len(seeds)} seeds in {out_dir}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
