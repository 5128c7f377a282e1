#!/usr/bin/env python3
"""alphamoe-route's command line on the host reference, no GPU needed (the
driver is hidden from the library through ALPHAMOE_CUDA_DRIVER, so the
checks run alike on a GPU machine):

- --version names this tool's version, the library's and the kernel images
  the build embedded;
- without a usable driver the tool says what is missing (no driver, a
  driver without what the library needs, no device), and refuses the
  options only a GPU reads (--specialization, --device);
- a bad --output is reported before any routing;
- a router the library refuses is reported by the options that set it;
- a preset and an --input file of another expert count are an error;
- float16, bfloat16 ('<V2', as NumPy saves ml_dtypes.bfloat16) and raw
  16-bit logits route as the contract says, and --dtype must match them;
- --bias FILE.npy and --expert-map FILE.npy are checked, used, and saved by
  --output with the random ones, so a run replays;
- a long CPU run prints its progress on stderr, and without --repeat the
  CPU reference is timed for about a second.

    check_cli.py ALPHAMOE_ROUTE --version V --archs 90,100 --stub-driver SO --stub-driver-no-proc SO
"""
import argparse
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

from npy_files import f32, read_npy, write_npy, write_npy_f32

NO_DRIVER = {'ALPHAMOE_CUDA_DRIVER': '/nonexistent/libcuda.so.1'}
# The C fields and flags an error must not be phrased in.
C_NAMES = ['routed_scaling_factor', 'num_experts', 'top_k', 'block_m', 'max_tokens', 'num_groups', 'topk_groups',
           'local_expert', 'correction_bias', 'logits_type', 'E=']


class Checker:
    def __init__(self, exe):
        self.exe = exe
        self.failures = []
        self.checks = 0

    def run(self, args, env=None, timeout=300):
        full_env = dict(os.environ)
        full_env.update(NO_DRIVER if env is None else env)
        p = subprocess.run([self.exe] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=full_env, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def expect(self, ok, what, out=''):
        self.checks += 1
        if not ok:
            self.failures.append(what + ('\n' + out if out else ''))
        return ok


def first_line(text):
    """The message: usage errors go on with the usage text, which names every option."""
    lines = text.strip().splitlines()
    return lines[0] if lines else ''


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def half_bits_to_float(bits):
    sign = -1.0 if bits & 0x8000 else 1.0
    exp, frac = (bits >> 10) & 0x1f, bits & 0x3ff
    if exp == 0:
        return sign * frac * 2.0 ** -24
    return sign * (1 + frac / 1024.0) * 2.0 ** (exp - 15)


def bf16_bits_to_float(bits):
    return struct.unpack('<f', struct.pack('<I', bits << 16))[0]


def check_version(c, version, archs):
    rc, out, err = c.run(['--version'])
    lines = out.splitlines()
    images = ', '.join('sm_%da' % a for a in sorted(archs))
    c.expect(rc == 0, '--version exited %d: %s' % (rc, err))
    c.expect(bool(lines) and lines[0] == 'alphamoe-route %s' % version,
             '--version: first line should be "alphamoe-route %s"' % version, out)
    c.expect(any(re.fullmatch(r'library:\s+AlphaMoE router %s' % re.escape(version), l) for l in lines),
             '--version: no "library: AlphaMoE router %s" line' % version, out)
    c.expect(any(re.fullmatch(r'kernel images:\s+%s' % re.escape(images), l) for l in lines),
             '--version: no "kernel images: %s" line' % images, out)


def check_no_gpu(c, stub, stub_no_proc):
    args = ['--preset', 'mixtral', '--tokens', 64, '--repeat', 1]
    for env, words, why in (
            (NO_DRIVER, ['no NVIDIA driver', '/nonexistent/libcuda.so.1', 'not found'], 'no driver installed'),
            ({'ALPHAMOE_CUDA_DRIVER': stub_no_proc}, ['NVIDIA driver', stub_no_proc, 'CUDA 12.0 or newer'],
             'a driver without cuGetProcAddress_v2'),
            ({'ALPHAMOE_CUDA_DRIVER': stub, 'STUB_DEVICE_COUNT': '0'}, ['no CUDA device'], 'no device')):
        rc, out, err = c.run(args, env=env)
        said = next((l for l in out.splitlines() if 'running the host reference instead' in l), '')
        c.expect(rc == 0 and 'host reference (CPU)' in out, '%s: the host reference should run' % why, out + err)
        c.expect(all(w in said for w in words) and 'insufficient' not in said,
                 '%s: the message should say %s: "%s"' % (why, words, said))
    # Options only a GPU reads, refused rather than ignored.
    for extra, flag in ((['--specialization', 'large'], '--specialization'), (['--device', 0], '--device'),
                        (['--device', 3], '--device')):
        rc, out, err = c.run(args + extra)
        err = first_line(err)
        c.expect(rc == 2 and flag in err and 'no NVIDIA driver' in err and 'time:' not in out,
                 '%s without a GPU: expected status 2 naming %s and the reason, got %d' % (extra, flag, rc),
                 out + err)
    for extra in (['--host', '--specialization', 'tiny'], ['--host', '--device', 0]):
        rc, out, err = c.run(args + extra)
        err = first_line(err)
        c.expect(rc == 2 and extra[1] in err and '--host' in err, '%s: expected status 2 naming both' % extra, err)
    rc, out, err = c.run(args + ['--specialization', 'auto'])
    c.expect(rc == 0, '--specialization auto without a GPU should run the host reference', out + err)


def check_output_checked_first(c, tmp):
    a_file = os.path.join(tmp, 'a_file')
    with open(a_file, 'w') as f:
        f.write('not a directory\n')
    bad = [(a_file, 'an existing file'), (os.path.join(tmp, 'missing', 'out'), 'a directory under a missing one')]
    if os.geteuid() != 0:  # root may write anywhere
        read_only = os.path.join(tmp, 'read_only')
        os.mkdir(read_only, 0o500)
        bad.append((read_only, 'a read-only directory'))
    for path, why in bad:
        rc, out, err = c.run(['--host', '--tokens', 256, '--repeat', 1, '--output', path])
        c.expect(rc != 0 and '--output' in err and path in err and 'time:' not in out and 'shape:' not in out,
                 '--output %s (%s): expected a failure naming --output before any routing, got %d' % (path, why, rc),
                 out + err)
    good = os.path.join(tmp, 'made')
    rc, out, err = c.run(['--host', '--tokens', 16, '--repeat', 1, '--output', good])
    c.expect(rc == 0 and os.path.isfile(os.path.join(good, 'topk_ids.npy')), '--output into a new directory failed',
             out + err)


def check_flag_errors(c):
    cases = [
        (['--scale', '-1'], ['--scale']),
        (['--scale', 'inf'], ['--scale']),
        (['--top-k', 33], ['--top-k']),
        (['--preset', 'mixtral', '--top-k', 9], ['--top-k']),
        (['--block-m', 300], ['--block-m']),
        (['--experts', 2049], ['--experts']),
        (['--groups', 3], ['--groups']),
        (['--preset', 'deepseek-v3', '--topk-groups', 9], ['--topk-groups']),
        (['--shared', '--top-k', 1], ['--shared']),
        (['--bias'], ['--bias', 'sigmoid']),
        (['--preset', 'deepseek-v3', '--scoring', 'softmax'], ['--scoring', 'deepseek-v3']),
        (['--ep-range', '500:100'], ['--ep-range']),
        (['--ep-map-random', 600], ['--ep-map-random']),
        (['--tokens', 2147483647], ['--tokens']),
    ]
    for args, flags in cases:
        rc, out, err = c.run(['--host', '--repeat', 1] + args)
        err = first_line(err)
        named = [n for n in C_NAMES if n in err]
        c.expect(rc == 2 and all(f in err for f in flags) and not named,
                 '%s: expected status 2 naming %s and no C field (found %s), got %d' % (args, flags, named, rc), err)


def random_rows(rng, m, e):
    return [[f32(rng.choice([rng.uniform(-8, 8), float(rng.randint(-3, 3))])) for _ in range(e)] for _ in range(m)]


def check_llama4(c, what, path, values, extra, want_type):
    """values: [M][16] as the router sees them (converted exactly)."""
    out_dir = path + '.out'
    rc, out, err = c.run(['--preset', 'llama4', '--host', '--repeat', 1, '--input', path, '--output', out_dir] + extra)
    routing = next((l for l in out.splitlines() if l.startswith('routing:')), '')
    if not c.expect(rc == 0 and routing.endswith('logits ' + want_type),
                    '%s: rc %d, routing line "%s" should end in "logits %s"' % (what, rc, routing, want_type),
                    out + err):
        return None
    ids = read_npy(os.path.join(out_dir, 'topk_ids.npy'))
    weights = read_npy(os.path.join(out_dir, 'topk_weights.npy'))
    c.expect(len(ids) == len(values), '%s: %d ids for %d tokens' % (what, len(ids), len(values)))
    for t, row in enumerate(values):
        best = max(range(len(row)), key=lambda e: (row[e], -e))
        want = sigmoid(row[best])
        if not c.expect(ids[t] == best and abs(weights[t] - want) <= 4e-6,
                        '%s token %d: expert %d weight %.9g; Llama-4 gives expert %d weight %.9g'
                        % (what, t, ids[t], weights[t], best, want)):
            break
    return ids, weights


def check_half_inputs(c, rng, tmp):
    m, e = 300, 16
    floats = random_rows(rng, m, e)
    # float16: every row rounded to binary16; the file's patterns are what routes.
    half = [[struct.unpack('<H', struct.pack('<e', v))[0] for v in row] for row in floats]
    half_values = [[half_bits_to_float(b) for b in row] for row in half]
    flat_half = [b for row in half for b in row]
    p = os.path.join(tmp, 'f16.npy')
    write_npy(p, '<f2', (m, e), [v for row in half_values for v in row])
    f16_result = check_llama4(c, "float16 ('<f2')", p, half_values, [], 'f16')
    p = os.path.join(tmp, 'f16_bits.npy')
    write_npy(p, '<i2', (m, e), [b - 0x10000 if b >= 0x8000 else b for b in flat_half])
    c.expect(check_llama4(c, "float16 patterns ('<i2', --dtype f16)", p, half_values, ['--dtype', 'f16'], 'f16')
             == f16_result, "'<i2' with --dtype f16 routes otherwise than the same values as '<f2'")

    # bfloat16: the upper halves of float32s.
    bf = [[struct.unpack('<I', struct.pack('<f', v))[0] >> 16 for v in row] for row in floats]
    bf_values = [[bf16_bits_to_float(b) for b in row] for row in bf]
    flat_bf = [b for row in bf for b in row]
    p = os.path.join(tmp, 'bf16.npy')
    write_npy(p, '<V2', (m, e), flat_bf)
    bf_result = check_llama4(c, "bfloat16 ('<V2', ml_dtypes)", p, bf_values, [], 'bf16')
    p = os.path.join(tmp, 'bf16_bits.npy')
    write_npy(p, '<u2', (m, e), flat_bf)
    c.expect(check_llama4(c, "bfloat16 patterns ('<u2', --dtype bf16)", p, bf_values, ['--dtype', 'bf16'], 'bf16')
             == bf_result, "'<u2' with --dtype bf16 routes otherwise than the same values as '<V2'")

    # --dtype must match the file, and raw patterns need it.
    f32_path = os.path.join(tmp, 'f32.npy')
    write_npy_f32(f32_path, floats)
    for path, extra, words in ((os.path.join(tmp, 'f16.npy'), ['--dtype', 'bf16'], ['f16', 'bf16', '--dtype']),
                               (os.path.join(tmp, 'bf16.npy'), ['--dtype', 'f32'], ['bf16', 'f32', '--dtype']),
                               (f32_path, ['--dtype', 'f16'], ['f32', 'f16', '--dtype']),
                               (os.path.join(tmp, 'bf16_bits.npy'), [], ['--dtype bf16', '--dtype f16']),
                               (os.path.join(tmp, 'bf16_bits.npy'), ['--dtype', 'f32'], ['--dtype bf16'])):
        rc, out, err = c.run(['--preset', 'llama4', '--host', '--repeat', 1, '--input', path] + extra)
        err = first_line(err)
        c.expect(rc == 2 and path in err and all(w in err for w in words),
                 '%s %s: expected status 2 naming the file and %s, got %d' % (path, extra, words, rc), err)
    p = os.path.join(tmp, 'f64.npy')
    write_npy(p, '<f8', (m, e), [v for row in floats for v in row])
    rc, out, err = c.run(['--preset', 'llama4', '--host', '--repeat', 1, '--input', p])
    c.expect(rc != 0 and "'<f8'" in err and "'<f2'" in err, 'a float64 file should be refused saying what is read', err)


def check_preset_and_input(c, rng, tmp):
    p = os.path.join(tmp, 'e16.npy')
    write_npy_f32(p, random_rows(rng, 40, 16))
    rc, out, err = c.run(['--host', '--repeat', 1, '--preset', 'mixtral', '--input', p])
    err = first_line(err)
    c.expect(rc == 2 and p in err and 'mixtral' in err and '16' in err and '--preset' in err,
             '--preset mixtral with a 16-column file: expected status 2 naming both, got %d' % rc, out + err)
    rc, out, err = c.run(['--host', '--repeat', 1, '--preset', 'mixtral', '--experts', 16, '--input', p])
    c.expect(rc == 0 and '40 tokens x 16 experts, top-k 2' in out,
             '--preset mixtral --experts 16 with a 16-column file should route E = 16', out + err)


def glm_rows(rng, m, e):
    """Each row a permutation of e logits 0.05 apart: sigmoids far apart."""
    grid = [f32(-4.0 + 8.0 * i / (e - 1)) for i in range(e)]
    rows = []
    for _ in range(m):
        row = grid[:]
        rng.shuffle(row)
        rows.append(row)
    return rows


def sqrt_softplus(x):
    return math.sqrt(x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x)))


def expected_glm(rows, bias, k=8, scale=2.5, score=sigmoid):
    """GLM-4.5's router (sigmoid, bias, top-k, renormalized, scaled) in float64,
    or with another score, DeepSeek-V4's."""
    ids, weights = [], []
    for row in rows:
        s = [score(v) for v in row]
        chosen = sorted(range(len(row)), key=lambda e: (-(s[e] + bias[e]), e))[:k]
        total = sum(s[e] for e in chosen)
        ids += chosen
        weights += [s[e] / total * scale for e in chosen]
    return ids, weights


def same_route(c, what, out_dir, ids, weights, tolerance):
    got_ids = read_npy(os.path.join(out_dir, 'topk_ids.npy'))
    got_w = read_npy(os.path.join(out_dir, 'topk_weights.npy'))
    bad = next((i for i in range(len(ids)) if got_ids[i] != ids[i] or abs(got_w[i] - weights[i]) > tolerance), None)
    return c.expect(len(got_ids) == len(ids) and bad is None,
                    '%s: pair %s is expert %s weight %s, expected %s and %s'
                    % (what, bad, got_ids[bad] if bad is not None else '-', got_w[bad] if bad is not None else '-',
                       ids[bad] if bad is not None else '-', weights[bad] if bad is not None else '-'))


def lifted_bias_inputs(rng, tmp, name, m, e, lifted):
    """glm_rows logits and a bias lifting `lifted` random experts by 1, which
    then choose every token's experts among themselves by their score:
    nothing a random bias in [-0.1, 0.1) would do. Both written to .npy
    files; returns (rows, logits path, bias, bias path)."""
    rows = glm_rows(rng, m, e)
    logits = os.path.join(tmp, name + '.npy')
    write_npy_f32(logits, rows)
    chosen = set(rng.sample(range(e), lifted))
    bias = [1.0 if i in chosen else f32(-rng.uniform(0.001, 0.1)) for i in range(e)]
    bias_path = os.path.join(tmp, name + '_bias.npy')
    write_npy(bias_path, '<f4', (e,), bias)
    return rows, logits, bias, bias_path


def check_bias_and_map(c, rng, tmp):
    m, e, k = 100, 160, 8
    rows, logits, bias, bias_path = lifted_bias_inputs(rng, tmp, 'glm', m, e, 12)
    want_ids, want_w = expected_glm(rows, bias)
    out1 = os.path.join(tmp, 'bias_out')
    base = ['--preset', 'glm-4.5', '--host', '--repeat', 1, '--input', logits]
    rc, out, err = c.run(base + ['--bias', bias_path, '--output', out1])
    if c.expect(rc == 0 and bias_path in out,
                '--bias %s: rc %d, or the routing line does not name it' % (bias_path, rc), out + err):
        same_route(c, '--bias FILE', out1, want_ids, want_w, 4e-6 * 2.5)
        c.expect(read_npy(os.path.join(out1, 'correction_bias.npy')) == bias,
                 '--output did not save the bias of --bias FILE')
    rc, out, err = c.run(base + ['--bias=' + bias_path, '--output', out1])
    c.expect(rc == 0, '--bias=FILE: rc %d' % rc, err)

    # A random bias is saved, and replays the run with another seed.
    out2, out3 = os.path.join(tmp, 'random_bias'), os.path.join(tmp, 'replayed')
    rc, out, err = c.run(base + ['--seed', 7, '--output', out2])
    saved = os.path.join(out2, 'correction_bias.npy')
    if c.expect(rc == 0 and os.path.isfile(saved), 'a random bias was not saved by --output', out + err):
        random_bias = read_npy(saved)
        c.expect(len(random_bias) == e and all(-0.1 <= b < 0.1 for b in random_bias),
                 'the saved random bias is not %d values in [-0.1, 0.1)' % e)
        ids, weights = expected_glm(rows, random_bias)
        same_route(c, 'the saved random bias', out2, ids, weights, 4e-6 * 2.5)
        rc, out, err = c.run(base + ['--seed', 8, '--bias', saved, '--output', out3])
        replayed = all(read_npy(os.path.join(out3, name)) == read_npy(os.path.join(out2, name))
                       for name in ('topk_ids.npy', 'topk_weights.npy', 'sorted_token_ids.npy'))
        c.expect(rc == 0 and replayed, 'routing again with the saved bias did not replay the run', out + err)

    # An expert map: 40 local experts in a random order, -1 elsewhere.
    local = rng.sample(range(e), 40)
    expert_map = [-1] * e
    for i, g in enumerate(local):
        expert_map[g] = i
    for descr in ('<i4', '<i8'):
        map_path = os.path.join(tmp, 'map%s.npy' % descr[1:])
        write_npy(map_path, descr, (e,), expert_map)
        out4 = os.path.join(tmp, 'map_out' + descr[1:])
        rc, out, err = c.run(base + ['--bias', bias_path, '--expert-map', map_path, '--output', out4])
        if not c.expect(rc == 0 and 'expert map of 40 local experts from ' + map_path in out,
                        '--expert-map %s: rc %d, or the map is not named' % (map_path, rc), out + err):
            continue
        same_route(c, '--expert-map', out4, want_ids, want_w, 4e-6 * 2.5)
        counts = read_npy(os.path.join(out4, 'expert_counts.npy'))
        want = [0] * 40
        for g in want_ids:
            if expert_map[g] >= 0:
                want[expert_map[g]] += 1
        c.expect(counts == want, '--expert-map %s: expert_counts %s, the map gives %s' % (descr, counts, want))
        c.expect(read_npy(os.path.join(out4, 'expert_map.npy')) == expert_map, '--output did not save the map')
    # A random map is saved, and is the one the plan used.
    out5 = os.path.join(tmp, 'random_map')
    rc, out, err = c.run(base + ['--ep-map-random', 24, '--output', out5])
    if c.expect(rc == 0 and os.path.isfile(os.path.join(out5, 'expert_map.npy')), 'a random map was not saved',
                out + err):
        saved_map = read_npy(os.path.join(out5, 'expert_map.npy'))
        ids = read_npy(os.path.join(out5, 'topk_ids.npy'))
        want = [0] * 24
        for g in ids:
            if saved_map[g] >= 0:
                want[saved_map[g]] += 1
        c.expect(sorted(v for v in saved_map if v >= 0) == list(range(24)) and
                 read_npy(os.path.join(out5, 'expert_counts.npy')) == want,
                 'the saved random map is not 24 local experts, or not the one the plan used')

    # Files that cannot be a bias or a map.
    bad = os.path.join(tmp, 'bad.npy')
    cases = [
        ('--bias', '<f4', (e - 1,), [0.0] * (e - 1), ['shape (%d,)' % e]),
        ('--bias', '<f4', (1, e), [0.0] * e, ['shape (%d,)' % e]),
        ('--bias', '<f8', (e,), [0.0] * e, ["'<f8'", 'float32']),
        ('--bias', '<f4', (e,), [0.0] * 5 + [float('nan')] + [0.0] * (e - 6), ['[5]', 'finite']),
        ('--bias', '<f4', (e,), [0.0] * 3 + [float('inf')] + [0.0] * (e - 4), ['[3]', 'finite']),
        ('--expert-map', '<i4', (e + 1,), [-1] * (e + 1), ['shape (%d,)' % e]),
        ('--expert-map', '<f4', (e,), [-1.0] * e, ["'<f4'", 'int32']),
        ('--expert-map', '<i4', (e,), [-1] * 7 + [e] + [-1] * (e - 8), ['[7]', str(e)]),
        ('--expert-map', '<i4', (e,), [-1] * 9 + [-2] + [-1] * (e - 10), ['[9]', '-2']),
        ('--expert-map', '<i8', (e,), [2 ** 40] + [-1] * (e - 1), ['[0]']),
        ('--expert-map', '<i4', (e,), [0, 1, 2, 1] + [-1] * (e - 4), ['[1]', '[3]']),
        ('--expert-map', '<i4', (e,), [-1] * e, ['no local experts']),
    ]
    for flag, descr, shape, values, words in cases:
        write_npy(bad, descr, shape, values)
        rc, out, err = c.run(base + [flag, bad])
        err = first_line(err)
        c.expect(rc == 2 and bad in err and all(w in err for w in words) and 'time:' not in out,
                 '%s with %s %s: expected status 2 naming the file and %s, got %d' % (flag, descr, shape, words, rc),
                 err)
    map_path = os.path.join(tmp, 'mapi4.npy')
    for extra in (['--ep-range', '0:8'], ['--ep-map-random', 8]):
        rc, out, err = c.run(base + ['--expert-map', map_path] + extra)
        err = first_line(err)
        c.expect(rc == 2 and '--expert-map' in err and extra[0] in err,
                 '--expert-map with %s: expected status 2 naming both' % extra[0], err)
    rc, out, err = c.run(base + ['--no-bias', '--bias', bias_path, '--scoring', 'softmax'])
    err = first_line(err)
    c.expect(rc == 2 and '--bias ' + bias_path in err and '--scoring' in err,
             '--bias FILE with softmax scoring: expected status 2 naming both', err)


def calls_and_min(out):
    m = re.search(r'median ([\d.]+) us, min ([\d.]+) us over (\d+) calls', out)
    return (int(m.group(3)), float(m.group(2)), float(m.group(1))) if m else (None, None, None)


def check_deepseek_v4(c, rng, tmp):
    """DeepSeek-V4-Pro's router: sqrt-softplus, bias, top-6 of 384, scale 2.5."""
    m, e, k = 60, 384, 6
    rows, logits, bias, bias_path = lifted_bias_inputs(rng, tmp, 'v4', m, e, 10)
    want_ids, want_w = expected_glm(rows, bias, k=k, scale=2.5, score=sqrt_softplus)
    out_dir = os.path.join(tmp, 'v4_out')
    rc, out, err = c.run(['--preset', 'deepseek-v4-pro', '--host', '--repeat', 1, '--input', logits,
                          '--bias', bias_path, '--output', out_dir])
    if c.expect(rc == 0 and 'sqrt-softplus' in out, '--preset deepseek-v4-pro: rc %d' % rc, out + err):
        same_route(c, 'deepseek-v4-pro with --bias FILE', out_dir, want_ids, want_w, 4e-6 * 2.5)


def check_progress(c):
    tokens = 20000
    while True:
        rc, out, err = c.run(['--host', '--tokens', tokens, '--repeat', 1])
        n, _, median = calls_and_min(out)
        if not c.expect(rc == 0 and n == 1, 'a timed CPU run failed', out + err):
            return
        if median >= 20e3 or tokens >= 1000000:
            break
        tokens *= 4
    # Without --repeat, about a second of calls; at most 100.
    rc, out, err = c.run(['--host', '--tokens', tokens])
    n, least, _ = calls_and_min(out)
    c.expect(rc == 0 and n is not None and 1 <= n < 100 and (n - 1) * least < 1e6,
             'without --repeat, %d tokens (%.0f us a call) should be timed about a second: %s calls'
             % (tokens, median, n), out)
    rc, out, err = c.run(['--host', '--tokens', 16])
    c.expect(rc == 0 and calls_and_min(out)[0] == 100, 'without --repeat, a fast CPU run should make 100 calls', out)
    # A run of some seconds says so after its first call (which takes at
    # least the minimum), and how far it is every 2 s until its last call.
    repeat = max(3, min(1000, int(6e6 / median) + 1))
    for _ in range(3):
        rc, out, err = c.run(['--host', '--tokens', tokens, '--repeat', repeat])
        n, least, _ = calls_and_min(out)
        if rc != 0 or n != repeat or (repeat - 2) * least >= 2e6:
            break
        repeat *= 2  # faster than the calibration: run longer
    announced = re.search(r'%d calls of the CPU reference, [\d.]+ s each: about [\d.]+ (s|min) in all' % repeat, err)
    updates = re.findall(r'(\d+) of %d calls done, about [\d.]+ (?:s|min) left' % repeat, err)
    c.expect(rc == 0 and n == repeat and announced is not None and len(updates) >= 1 and 'calls done' not in out,
             '--repeat %d of %.0f us calls: expected the estimate and a progress line on stderr' % (repeat, median),
             'stdout:\n' + out + 'stderr:\n' + err)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('exe')
    ap.add_argument('--version', required=True)
    ap.add_argument('--archs', required=True)
    ap.add_argument('--stub-driver', required=True)
    ap.add_argument('--stub-driver-no-proc', required=True)
    a = ap.parse_args()
    seed = int(os.environ.get('ALPHAMOE_TEST_SEED', '0'), 0) or random.randrange(1, 2 ** 32)
    print('seed %d (ALPHAMOE_TEST_SEED)' % seed)
    rng = random.Random(seed)
    c = Checker(a.exe)
    with tempfile.TemporaryDirectory() as tmp:
        check_version(c, a.version, [int(x) for x in a.archs.split(',')])
        check_no_gpu(c, a.stub_driver, a.stub_driver_no_proc)
        check_output_checked_first(c, tmp)
        check_flag_errors(c)
        check_preset_and_input(c, rng, tmp)
        check_half_inputs(c, rng, tmp)
        check_bias_and_map(c, rng, tmp)
        check_deepseek_v4(c, rng, tmp)
        check_progress(c)
    for f in c.failures:
        print('FAIL:', f)
    print('%d checks, %d failed' % (c.checks, len(c.failures)))
    return 1 if c.failures else 0


if __name__ == '__main__':
    sys.exit(main())
