"""The library through the ctypes module: the CPU reference against the
contract computed here (every flavour), shapes checked, every field and
status of the headers reachable, the module generated from the headers, bad
input, and a GPU route with raw device addresses that matches the reference
or reports that there is no driver or device."""
import array
import ctypes
import os
import math
import unittest

import alphamoe_router as amr
import contract
from alphamoe_router import _abi, _cuda
from contract import POISON, POISON_WEIGHT

try:
    import numpy
except ImportError:
    numpy = None

CASES = [  # (E, k, block_m, max_tokens, M, flags)
    (8, 2, 4, 5, 5, 0),
    (64, 6, 16, 40, 33, 0),
    (512, 10, 8, 20, 17, 0),
    (16, 16, 1, 9, 9, 0),
    (128, 8, 64, 100, 100, amr.FLAG_SHARED_EXPERT),
    (7, 3, 256, 3, 2, amr.FLAG_SHARED_EXPERT),
]


def flat(rows):
    return [x for row in rows for x in row]


def host_outputs(plan):
    return {
        'topk_ids': flat(plan.topk_ids), 'topk_weights': flat(plan.topk_weights),
        'sorted_token_ids': plan.sorted_token_ids_buffer, 'expert_ids': plan.expert_ids_buffer,
        'num_tokens_post_padded': plan.num_tokens_post_padded, 'expert_counts': plan.expert_counts,
        'expert_offsets': plan.expert_offsets, 'pair_to_sorted': flat(plan.pair_to_sorted),
    }


def open_driver():
    """(driver, why) with device 0 usable, or (None, why not)."""
    try:
        drv = _cuda.driver()
    except OSError as e:
        return None, f'no CUDA driver ({e})'
    except _cuda.DriverError as e:
        return None, f'the CUDA driver has no device ({e})'
    count = drv.device_count()
    return (drv, f'{count} CUDA devices') if count else (None, 'the driver sees no device')


class HostReference(unittest.TestCase):
    def test_follows_the_contract(self):
        seed = contract.seed('HostReference.test_follows_the_contract')
        rng = contract.Rng(seed)
        for e, k, bm, max_tokens, m, flags in CASES:
            with self.subTest(E=e, k=k, block_m=bm, M=m, flags=flags, seed=seed):
                router = amr.Router(e, k, bm, max_tokens, flags=flags)
                z = router.sizes
                capacity = contract.expected_capacity(e, k, bm, max_tokens)
                self.assertEqual((z['sorted_token_ids'], z['expert_ids']), (capacity, capacity // bm))
                self.assertEqual((z['topk_ids'], z['topk_weights'], z['pair_to_sorted']),
                                 (max_tokens * k,) * 3)
                self.assertEqual((z['expert_counts'], z['expert_offsets']), (e, e + 1))
                logits = contract.random_logits(rng, m, e)
                plan = router.plan()
                plan.fill(POISON, POISON_WEIGHT)
                router.route_host_into(logits, plan, m)
                self.assertEqual(len(plan.topk_ids), m)
                self.assertTrue(all(len(row) == k for row in plan.topk_ids + plan.topk_weights + plan.pair_to_sorted))
                why = contract.check(router.params, m, logits, host_outputs(plan))
                self.assertIsNone(why, f'seed {seed}')
                self.assertEqual(router.route_host(logits).topk_ids, plan.topk_ids,
                                 'num_tokens taken from the logits')

    def test_inputs_of_every_kind(self):
        router = amr.Router(8, 2, 4, 2)
        values = [float((i * 5) % 8) for i in range(16)]
        expected = router.route_host(values).topk_ids
        self.assertEqual(len(expected), 2)
        self.assertEqual(router.route_host(array.array('f', values)).topk_ids, expected)
        self.assertEqual(router.route_host(tuple(int(v) for v in values)).topk_ids, expected)
        self.assertEqual(router.route_host([values[:8], values[8:]]).topk_ids, expected)
        if numpy is None:
            return
        self.assertEqual(router.route_host(numpy.array(values, dtype=numpy.float64).reshape(2, 8)).topk_ids, expected)
        got = router.route_host(values).as_numpy()
        self.assertEqual(got['topk_ids'].tolist(), expected)
        for name in ('topk_ids', 'topk_weights', 'pair_to_sorted'):
            self.assertEqual(got[name].shape, (2, 2), name)
        for name in ('sorted_token_ids', 'expert_ids', 'expert_counts', 'expert_offsets', 'num_tokens_post_padded'):
            self.assertEqual(got[name].ndim, 1, name)

    def test_shapes_are_checked_never_flattened(self):
        router = amr.Router(8, 2, 4, 4)
        bad = [([[0.0] * 7] * 3, '(3, 7)'), ([0.0] * 15, '(15,)'), ([[0.0] * 8, [0.0] * 7], '[7, 8]')]
        if numpy is not None:
            bad += [(numpy.zeros((3, 7)), '(3, 7)'), (numpy.zeros((2, 2, 8)), '(2, 2, 8)'),
                    (numpy.zeros((5, 8)), '(5, 8)')]
        for logits, shape in bad:
            with self.subTest(shape=shape):
                plan = router.plan()
                plan.fill(POISON, 0.0)
                with self.assertRaises(amr.Error) as caught:
                    router.route_host_into(logits, plan)
                self.assertIn(caught.exception.status, (amr.Status.INVALID_ARGUMENT, amr.Status.NUM_TOKENS))
                if caught.exception.status == amr.Status.INVALID_ARGUMENT:
                    self.assertIn(shape, str(caught.exception))
                self.assertTrue(all(x == POISON for x in plan.sorted_token_ids_buffer), 'a rejected call wrote')
        # A row stride wider than E takes rows of E or of the stride.
        wide = amr.Router(8, 2, 4, 4, logits_row_stride=12)
        rows = [[float((t * 7 + i * 3) % 8) for i in range(8)] for t in range(3)]
        want = router.route_host(rows).topk_ids
        self.assertEqual(wide.route_host(rows).topk_ids, want)
        self.assertEqual(wide.route_host([row + [99.0] * 4 for row in rows]).topk_ids, want)
        self.assertEqual(wide.route_host(flat(row + [99.0] * 4 for row in rows)).topk_ids, want)

    def test_zero_tokens_give_an_empty_plan(self):
        router = amr.Router(32, 4, 8, 16)
        plan = router.plan()
        plan.fill(POISON, 0.0)
        router.route_host_into([], plan, 0)
        self.assertEqual(plan.num_tokens_post_padded, 0)
        self.assertEqual((plan.topk_ids, plan.sorted_token_ids), ([], []))
        self.assertTrue(all(x == POISON for x in plan.sorted_token_ids_buffer), 'M = 0 wrote the plan')

    def test_hash_routing(self):
        """DeepSeek-V4's hash layers: each token's experts are its row of the
        table, the weights its sqrt-softplus scores there, renormalized and
        scaled; a token id outside the vocabulary or an entry outside the
        experts is a pair of no expert (id -1, weight 0, in no group)."""
        seed = contract.seed('HostReference.test_hash_routing')
        rng = contract.Rng(seed)
        e, k, vocab, m = 32, 4, 50, 30
        router = amr.Router(e, k, 8, m, flags=amr.FLAG_HASH_ROUTING, scoring='sqrt_softplus', vocab_size=vocab,
                            routed_scaling_factor=1.5)
        table = [[int(rng.next() % e) for _ in range(k)] for _ in range(vocab)]
        table[3][1] = e  # an entry past the experts
        token_ids = [int(rng.next() % (vocab + 4)) - 2 for _ in range(m)]  # -2..vocab+1
        token_ids[0] = 3
        logits = contract.separated_logits(rng, m, e)
        plan = router.route_host(logits, token_ids=token_ids, hash_table=table)
        for t in range(m):
            v = token_ids[t]
            want = [x if 0 <= v < vocab and 0 <= x < e else -1 for x in (table[v] if 0 <= v < vocab else [0] * k)]
            with self.subTest(token=t, seed=seed):
                self.assertEqual(list(plan.topk_ids[t]), want)
                s = [math.sqrt(math.log1p(math.exp(logits[t * e + x]))) if x >= 0 else 0.0 for x in want]
                total = sum(s)
                for j in range(k):
                    expected = s[j] / total * 1.5 if total > 0 else 0.0
                    self.assertAlmostEqual(plan.topk_weights[t][j], expected, delta=4e-6 * 1.5)
        self.assertEqual(plan.topk_ids[0][1], -1)
        planned = sum(1 for t in range(m) for x in plan.topk_ids[t] if x >= 0)
        self.assertEqual(sum(plan.expert_counts), planned)
        with self.assertRaises(amr.Error) as caught:
            router.route_host(logits)  # no table
        self.assertEqual(caught.exception.status, amr.Status.NULL_POINTER)
        with self.assertRaises(amr.Error) as caught:
            amr.Router(e, k, 8, m, vocab_size=vocab)
        self.assertEqual(caught.exception.status, amr.Status.HASH_ROUTING)

    def test_redundant_experts(self):
        """EPLB: pair p of logical expert x takes replica p % replica_count[x],
        physical id logical_to_physical[x * R + replica]; a count outside
        [1, R] or an id outside [0, P) is a pair of no expert. The weights
        are the unmapped call's, and physical_load gains one per mapped pair."""
        seed = contract.seed('HostReference.test_redundant_experts')
        rng = contract.Rng(seed)
        e, k, p_count, r, m = 24, 4, 40, 3, 30
        router = amr.Router(e, k, 8, m, flags=amr.FLAG_REDUNDANT_EXPERTS, num_physical_experts=p_count,
                            replica_slots=r)
        self.assertEqual(router.params['local_expert_count'], p_count)
        plain = amr.Router(e, k, 8, m)
        counts = [1 + int(rng.next() % r) for _ in range(e)]
        counts[5], counts[6] = 0, r + 1  # pairs of no expert
        table = [int(rng.next() % p_count) for _ in range(e * r)]
        table[7 * r] = p_count  # an id past the physical experts
        counts[7] = 1
        load = [int(rng.next() % 100) + 1 for _ in range(p_count)]
        want_load = list(load)
        logits = contract.separated_logits(rng, m, e)
        base = plain.route_host(logits)
        plan = router.route_host(logits, logical_to_physical=table, replica_count=counts, physical_load=load)
        for t in range(m):
            want = []
            for j, x in enumerate(base.topk_ids[t]):
                c = counts[x]
                q = table[x * r + (t * k + j) % c] if 1 <= c <= r else -1
                want.append(q if 0 <= q < p_count else -1)
            for q in want:
                if q >= 0:
                    want_load[q] += 1
            with self.subTest(token=t, seed=seed):
                self.assertEqual(list(plan.topk_ids[t]), want)
                self.assertEqual(list(plan.topk_weights[t]), list(base.topk_weights[t]))
        self.assertEqual(load, want_load)
        planned = sum(1 for t in range(m) for x in plan.topk_ids[t] if x >= 0)
        self.assertEqual(sum(plan.expert_counts), planned)
        self.assertEqual(len(plan.expert_counts), p_count)
        with self.assertRaises(amr.Error) as caught:
            router.route_host(logits)  # no tables
        self.assertEqual(caught.exception.status, amr.Status.NULL_POINTER)
        with self.assertRaises(amr.Error) as caught:
            amr.Router(e, k, 8, m, flags=amr.FLAG_REDUNDANT_EXPERTS, num_physical_experts=p_count,
                       replica_slots=p_count + 1)
        self.assertEqual(caught.exception.status, amr.Status.REDUNDANT_EXPERTS)

    def test_flavours_follow_the_contract(self):
        seed = contract.seed('HostReference.test_flavours_follow_the_contract')
        rng = contract.Rng(seed)
        e = 64
        expert_map = [int(rng.next() % 40) - 8 for _ in range(e)]  # -8..31, a third not local with L = 24
        flavours = [  # (Router fields, bias?, expert map?)
            (dict(scoring='sigmoid'), False, False),
            (dict(scoring='sigmoid', flags=amr.FLAG_NO_RENORMALIZE, top_k=1), False, False),  # Llama-4
            (dict(scoring='sigmoid', flags=amr.FLAG_CORRECTION_BIAS, num_groups=8, topk_groups=4,
                  routed_scaling_factor=2.5), True, False),  # DeepSeek-V3
            (dict(scoring='sqrt_softplus', flags=amr.FLAG_CORRECTION_BIAS, routed_scaling_factor=1.5), True,
             False),  # DeepSeek-V4
            (dict(scoring=amr.Scoring.SQRT_SOFTPLUS, flags=amr.FLAG_NO_RENORMALIZE), False, False),
            (dict(flags=amr.FLAG_NO_RENORMALIZE), False, False),  # Qwen2-MoE
            (dict(num_groups=4, topk_groups=2, logits_type='bf16'), False, False),
            (dict(logits_type=amr.LogitsType.F16, routed_scaling_factor=0.5), False, False),
            (dict(local_expert_begin=16, local_expert_count=20), False, False),
            (dict(flags=amr.FLAG_EXPERT_MAP, local_expert_count=24), False, True),
        ]
        for fields, with_bias, with_map in flavours:
            fields = dict(dict(num_experts=e, top_k=6, block_m=8, max_tokens=40), **fields)
            with self.subTest(fields=fields, seed=seed):
                router = amr.Router(**fields)
                m = 37
                logits = contract.separated_logits(rng, m, e)
                bias = [((rng.next() % 17) - 8) / 8 for _ in range(e)] if with_bias else None
                plan = router.plan()
                plan.fill(POISON, POISON_WEIGHT)
                router.route_host_into(logits, plan, correction_bias=bias, expert_map=expert_map if with_map else None)
                expected = contract.flavour_expectation(router.params, m, logits, bias)
                why = contract.check(router.params, m, logits, host_outputs(plan), expected=expected,
                                     expert_map=expert_map)
                self.assertIsNone(why, f'seed {seed}')
                local, count = contract.local_ids(router.params, expert_map)
                self.assertEqual(router.sizes['expert_counts'], count)


class Reachable(unittest.TestCase):
    """Every field, status, flag and function of both headers is reachable."""

    def test_every_parameter_by_its_name(self):
        fields = [name for name, _ in _abi.Params._fields_ if name != 'struct_size']
        router = amr.Router(64, 4, 16, 8)
        self.assertEqual(sorted(router.params), sorted(fields))
        values = dict(num_experts=64, top_k=4, block_m=16, max_tokens=8, logits_row_stride=80,
                      flags=amr.FLAG_CORRECTION_BIAS | amr.FLAG_TAIL_FILL | amr.FLAG_REDUNDANT_EXPERTS,
                      force_specialization='large', scoring='sigmoid', logits_type='f16', num_groups=8,
                      topk_groups=2, routed_scaling_factor=2.5, local_expert_begin=8, local_expert_count=16,
                      reserved=0, vocab_size=0, num_physical_experts=72, replica_slots=3, reserved2=0)
        self.assertEqual(sorted(values), sorted(fields), 'a field of alphamoe_params this test does not set')
        router = amr.Router(**values)
        for name, value in values.items():
            want = getattr(amr, {'force_specialization': 'Specialization', 'scoring': 'Scoring',
                                 'logits_type': 'LogitsType'}[name])[value.upper()] if isinstance(value, str) else value
            self.assertEqual(router.params[name], want, name)
        with self.assertRaises(TypeError):
            amr.Router(64, 4, 16, 8, no_such_field=1)
        with self.assertRaises(amr.Error) as caught:
            amr.Router(64, 4, 16, 8, reserved=1)
        self.assertEqual(caught.exception.status, amr.Status.INVALID_ARGUMENT)

    def test_every_size_and_buffer_field(self):
        router = amr.Router(64, 4, 16, 8)
        for name, _ in _abi.Sizes._fields_[1:]:
            self.assertIn(name, router.sizes)
        buffers = amr.DeviceBuffers()
        for name, _ in _abi.Buffers._fields_[1:]:
            self.assertEqual(getattr(buffers, name), 0, name)

    def test_every_status_has_its_name(self):
        c_names = {name: value for name, value in contract.header_enums()['alphamoe_status']}
        self.assertEqual(len(c_names), len(amr.Status))
        for status in amr.Status:
            c_name = 'ALPHAMOE_OK' if status == amr.Status.OK else f'ALPHAMOE_ERROR_{status.name}'
            self.assertEqual(c_names.get(c_name), int(status), c_name)
            self.assertTrue(amr.status_message(status).startswith(c_name), amr.status_message(status))
            self.assertEqual(amr.Error(status).status, status)
        self.assertEqual(amr.Error(9999).status, 9999, 'a status newer than the module stays an int')

    def test_flags_and_limits(self):
        flags = [getattr(amr, n) for n in dir(amr) if n.startswith('FLAG_') and n != 'FLAG_ALL']
        all_flags = 0
        for f in flags:
            all_flags |= f
        self.assertEqual(all_flags, amr.FLAG_ALL)
        self.assertEqual((amr.MAX_EXPERTS, amr.MAX_TOP_K, amr.MAX_BLOCK_M), (2048, 32, 256))
        self.assertEqual(len(amr.kernel_names()), 21)
        names = amr.entry_point_names()
        self.assertEqual(len(set(names)), len(names))
        self.assertTrue(all(n.startswith('alphamoe_') for n in names))
        with self.assertRaises(amr.Error) as caught:
            amr.Router(64, 4, 16, 8, flags=amr.FLAG_ALL << 1 & ~amr.FLAG_ALL)
        self.assertEqual(caught.exception.status, amr.Status.FLAGS)

    def test_selection_and_specializations(self):
        h200 = dict(compute_capability=90, multiprocessor_count=132, cooperative_ctas_per_sm=1, cooperative_launch=1)
        router = amr.Router(64, 4, 16, 4096)
        names = {amr.specialization_name(s) for s in amr.Specialization}
        self.assertEqual(names, {'auto', 'tiny', 'small', 'large'})
        self.assertIsNone(amr.specialization_name(99))
        for m, want in ((1, 'tiny'), (100, 'small'), (4096, 'large')):
            selection = router.select(m, h200)
            self.assertEqual(sorted(selection), sorted(n for n, _ in _abi.Selection._fields_[1:]))
            self.assertEqual(amr.specialization_name(selection['specialization']), want, selection)
            self.assertEqual(selection['image_arch'], 90)
        with self.assertRaises(amr.Error) as caught:
            router.select(4097, h200)
        self.assertEqual(caught.exception.status, amr.Status.NUM_TOKENS)


class BadInput(unittest.TestCase):
    def test_errors_carry_the_status_and_message(self):
        with self.assertRaises(amr.Error) as caught:
            amr.Router(64, 0, 16, 8)
        self.assertEqual(caught.exception.status, amr.Status.TOP_K)
        self.assertTrue(str(caught.exception).startswith('ALPHAMOE_ERROR_TOP_K'), str(caught.exception))
        for args, kwargs, status in (((2049, 4, 16, 8), {}, amr.Status.NUM_EXPERTS),
                                     ((64, 4, 0, 8), {}, amr.Status.BLOCK_M),
                                     ((64, 1, 16, 8), {'flags': amr.FLAG_SHARED_EXPERT}, amr.Status.SHARED_EXPERT),
                                     ((2**40, 4, 16, 8), {}, amr.Status.NUM_EXPERTS),
                                     ((64, 4, 16, 8), {'flags': 0x100}, amr.Status.FLAGS)):
            with self.subTest(args=args, kwargs=kwargs):
                with self.assertRaises(amr.Error) as caught:
                    amr.Router(*args, **kwargs)
                self.assertEqual(caught.exception.status, status)

    def test_flavour_inputs_come_with_their_flags(self):
        plain = amr.Router(8, 2, 4, 2)
        biased = amr.Router(8, 2, 4, 2, scoring='sigmoid', flags=amr.FLAG_CORRECTION_BIAS)
        logits = [[float(i) for i in range(8)]] * 2
        for call, status, text in (
                (lambda: plain.route_host(logits, correction_bias=[0.0] * 8), amr.Status.INVALID_ARGUMENT,
                 'without ALPHAMOE_FLAG_CORRECTION_BIAS'),
                (lambda: biased.route_host(logits), amr.Status.NULL_POINTER, 'NULL_POINTER'),
                (lambda: biased.route_host(logits, correction_bias=[0.0] * 7), amr.Status.INVALID_ARGUMENT, '(7,)'),
                (lambda: amr.Router(8, 2, 4, 2, scoring='tanh'), amr.Status.SCORING, 'softmax, sigmoid, sqrt_softplus'),
                (lambda: amr.Router(8, 2, 4, 2, flags=amr.FLAG_CORRECTION_BIAS), amr.Status.SCORING, 'SCORING'),
                (lambda: amr.Router(8, 2, 4, 2, num_groups=3), amr.Status.GROUPS, 'GROUPS'),
                (lambda: amr.Router(8, 2, 4, 2, routed_scaling_factor=float('nan')), amr.Status.SCALING_FACTOR, ''),
                (lambda: amr.Router(8, 2, 4, 2, local_expert_begin=4, local_expert_count=8),
                 amr.Status.EXPERT_PARALLEL, '')):
            with self.subTest(text=text):
                with self.assertRaises(amr.Error) as caught:
                    call()
                self.assertEqual(caught.exception.status, status)
                self.assertIn(text, str(caught.exception))

    def test_a_rejected_call_changes_nothing(self):
        router = amr.Router(64, 4, 16, 8)
        logits = [0.5] * (9 * 64)
        plan = router.plan()
        plan.fill(POISON, 0.0)
        for call, status in ((lambda: router.route_host_into(logits, plan, 9), amr.Status.NUM_TOKENS),
                             (lambda: router.route_host_into(logits[:100], plan, 2), amr.Status.INVALID_ARGUMENT),
                             (lambda: router.route_host_into(logits, amr.Router(64, 2, 16, 1).plan(), 1),
                              amr.Status.INVALID_ARGUMENT)):
            with self.assertRaises(amr.Error) as caught:
                call()
            self.assertEqual(caught.exception.status, status)
        self.assertTrue(all(x == POISON for x in plan.sorted_token_ids_buffer + plan.expert_ids_buffer))


class Library(unittest.TestCase):
    def test_version_and_kernels(self):
        major, minor, patch = (int(p) for p in amr.version().split('.'))
        self.assertEqual(amr.version_number(), major * 10000 + minor * 100 + patch)
        names = amr.kernel_names()
        # Three families, each routed-only and shared-expert, each once without
        # and once with the routing flavours, then each routed-only with
        # sqrt-softplus scoring, then the wide kernels of both modes, in the
        # header's order.
        expected = [f'{family}_{mode}{flavours}' for flavours in ('', '_flavours')
                    for family in ('tiny', 'small', 'large') for mode in ('routed', 'shared')]
        expected += [f'{family}_routed_sqrt_softplus' for family in ('tiny', 'small', 'large')]
        expected += [f'{family}_{mode}_wide' for family in ('tiny', 'small', 'large') for mode in ('routed', 'shared')]
        self.assertEqual(names, expected)
        for i, name in enumerate(names):
            archs = amr.kernel_images(i)
            self.assertTrue(archs and set(archs) <= {90, 100, 103}, f'{name}: {archs}')

    def test_module_is_generated_from_the_headers(self):
        """_abi.py is what packaging/python/gen_abi.py makes of the headers,
        and its layout is the C compiler's."""
        gen_abi = contract.gen_abi()
        include = os.path.join(contract.SOURCE, 'include')
        model = gen_abi.parse(gen_abi.read_headers(include))
        with open(_abi.__file__) as f:
            self.assertEqual(f.read(), gen_abi.generate(model, gen_abi.HEADERS),
                             'the module differs from the headers: run packaging/python/gen_abi.py')
        import shutil
        import tempfile
        if not shutil.which('cc'):
            self.skipTest('no C compiler to lay the headers out')
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, 'alphamoe'))
            with open(os.path.join(tmp, 'alphamoe', 'version.h'), 'w') as f:
                f.write('#define ALPHAMOE_VERSION_NUMBER 0\n')
            layout = gen_abi.compiled_layout(model, 'cc', ['-I' + include, '-I' + tmp])
        self.assertEqual(gen_abi.layout_mismatches(_abi.STRUCTS, layout), [])

    def test_library_found(self):
        path = amr.library_path()
        if os.environ.get('ALPHAMOE_EXPECT_BUNDLED'):
            from alphamoe_router import _ffi
            self.assertEqual(path, _ffi.BUNDLED, 'the wheel\'s own library was not the one loaded')
        print(f'library: {path}')


class Gpu(unittest.TestCase):
    def test_route_matches_the_reference_or_reports_no_gpu(self):
        seed = contract.seed('Gpu.test_route_matches_the_reference_or_reports_no_gpu')
        rng = contract.Rng(seed)
        e, k, bm, m = 128, 8, 16, 300
        router = amr.Router(e, k, bm, m)
        z = router.sizes
        logits = contract.random_logits(rng, m, e)
        host = router.route_host(logits, m)
        drv, why = open_driver()

        if drv is None:
            # The same call with host memory where device memory would be:
            # the library must refuse before touching any of it.
            arrays = {name: (ctypes.c_int32 * max(z[name], 1))(*([POISON] * max(z[name], 1)))
                      for name in ('topk_ids', 'topk_weights', 'sorted_token_ids', 'expert_ids')}
            live = ctypes.c_int32(POISON)
            workspace = (ctypes.c_uint8 * (z['workspace_bytes'] + 256))()
            host_logits = (ctypes.c_float * len(logits))(*logits)
            buffers = amr.DeviceBuffers(
                topk_ids=ctypes.addressof(arrays['topk_ids']), topk_weights=ctypes.addressof(arrays['topk_weights']),
                sorted_token_ids=ctypes.addressof(arrays['sorted_token_ids']),
                sorted_token_ids_capacity=z['sorted_token_ids'],
                expert_ids=ctypes.addressof(arrays['expert_ids']), expert_ids_capacity=z['expert_ids'],
                num_tokens_post_padded=ctypes.addressof(live),
                workspace=(ctypes.addressof(workspace) + 255) // 256 * 256, workspace_bytes=z['workspace_bytes'])
            with self.assertRaises(amr.Error, msg='a GPU route without a driver or device succeeded') as caught:
                router.route(m, ctypes.addressof(host_logits), buffers)
            self.assertIn(caught.exception.status, (amr.Status.NO_DRIVER, amr.Status.NO_DEVICE),
                          f'without a GPU ({why}) the route said {caught.exception}')
            self.assertEqual(live.value, POISON)
            self.assertTrue(all(x == POISON for a in arrays.values() for x in a), 'a refused route wrote')
            self.skipTest(f'GPU part: {why}; the route call said "{caught.exception}"')

        fill = 0x5A
        allocated = []

        def alloc(nbytes, value):
            allocated.append(drv.alloc(0, nbytes, value))
            return allocated[-1]

        try:
            d_logits = drv.upload(0, (ctypes.c_float * len(logits))(*logits))
            allocated.append(d_logits)
            d = {name: alloc(4 * z[name], fill) for name in
                 ('topk_ids', 'topk_weights', 'sorted_token_ids', 'expert_ids', 'expert_counts',
                  'expert_offsets', 'pair_to_sorted')}
            d_live = alloc(4, fill)
            d_workspace = alloc(z['workspace_bytes'], 0)
            buffers = amr.DeviceBuffers(
                topk_ids=d['topk_ids'], topk_weights=d['topk_weights'],
                sorted_token_ids=d['sorted_token_ids'], sorted_token_ids_capacity=z['sorted_token_ids'],
                expert_ids=d['expert_ids'], expert_ids_capacity=z['expert_ids'],
                num_tokens_post_padded=d_live, workspace=d_workspace, workspace_bytes=z['workspace_bytes'],
                expert_counts=d['expert_counts'], expert_offsets=d['expert_offsets'],
                pair_to_sorted=d['pair_to_sorted'])
            drv.run_in(0, lambda: router.route(m, d_logits, buffers))
            drv.synchronize(0)
            gpu = {name: drv.download(0, d[name], ctypes.c_float if name == 'topk_weights' else ctypes.c_int32,
                                      z[name]) for name in d}
            gpu['num_tokens_post_padded'] = drv.download(0, d_live, ctypes.c_int32, 1)[0]
        finally:
            for address in allocated:
                drv.free(0, address)
        why_not = contract.check(router.params, m, logits, gpu)
        self.assertIsNone(why_not, f'GPU result, seed {seed}')
        self.assertEqual(gpu['topk_ids'], flat(host.topk_ids), f'GPU and CPU ids differ (seed {seed})')
        self.assertEqual(gpu['sorted_token_ids'][:host.num_tokens_post_padded], host.sorted_token_ids)
        self.assertEqual(gpu['expert_ids'][:len(host.expert_ids)], host.expert_ids)
        self.assertEqual(gpu['pair_to_sorted'], flat(host.pair_to_sorted))
        print(f'GPU route of {m} tokens matches the CPU reference ({why})')


if __name__ == '__main__':
    unittest.main()
