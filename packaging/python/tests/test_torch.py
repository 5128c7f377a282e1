"""route() with tensors, the torch op, torch.compile, CUDA graphs, CuPy and
JAX, and the vLLM / SGLang drop-ins, against the contract computed here.

Without torch every test skips, saying so; without a GPU the CPU half runs
(CPU tensors take the CPU reference through the same functions) and the
GPU half skips, saying why."""
import contextlib
import os
import sys
import unittest

import alphamoe_router as amr
import contract

try:
    import torch
except ImportError:
    torch = None
else:
    import alphamoe_router.torch_ops  # noqa: F401 (the op, for torch.compile)

GPU_WHY = ('torch is not installed' if torch is None else
           None if torch.cuda.is_available() else 'torch sees no CUDA device')


def flat(t):
    return [] if t is None else t.reshape(-1).tolist()


def first_difference(got, want, tolerance=0.0):
    """None when the flat lists got and want are equal (within tolerance),
    else how many elements differ and the first of them."""
    if len(got) != len(want):
        return f'{len(got)} elements, {len(want)} expected'
    bad = [i for i, (a, b) in enumerate(zip(got, want)) if not abs(a - b) <= tolerance]
    if not bad:
        return None
    i = bad[0]
    return f'{len(bad)} of {len(got)} elements differ, the first at index {i}: {got[i]!r}, expected {want[i]!r}'


def streams():
    """The current streams of torch (and CuPy where imported), for failure messages."""
    text = f'torch current stream {torch.cuda.current_stream().cuda_stream:#x}'
    cupy = sys.modules.get('cupy')
    return text + (f', CuPy current stream {cupy.cuda.get_current_stream().ptr:#x}' if cupy else '')


def poison_allocator():
    """Leaves poisoned memory where torch's caching allocator takes the next
    small tensors from, so that an output nothing writes shows."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.full((1 << 18,), contract.POISON, dtype=torch.int32, device='cuda')  # freed at once, kept cached


def outputs(r):
    """A Routing as contract.check reads it (flat lists)."""
    out = {name: flat(getattr(r, name)) for name in amr.Routing._fields}
    out['num_tokens_post_padded'] = out['num_tokens_post_padded'][0]
    for name in ('expert_counts', 'expert_offsets', 'pair_to_sorted'):
        if getattr(r, name) is None:
            out[name] = None
    return out


def logits_tensor(values, m, e, dtype, device):
    return torch.tensor(values, dtype=torch.float32).reshape(m, e).to(dtype).to(device)


FLAVOURS = [  # Router fields beyond E, k, block_m, max_tokens; bias?; map?
    ({}, False, False),
    (dict(flags=amr.FLAG_SHARED_EXPERT), False, False),
    (dict(scoring='sigmoid', flags=amr.FLAG_CORRECTION_BIAS, num_groups=8, topk_groups=4,
          routed_scaling_factor=2.5), True, False),
    (dict(flags=amr.FLAG_NO_RENORMALIZE, logits_type='bf16'), False, False),
    (dict(logits_type='f16', num_groups=4, topk_groups=2), False, False),
    (dict(flags=amr.FLAG_EXPERT_MAP, local_expert_count=24), False, True),
]


@unittest.skipIf(torch is None, 'torch is not installed')
class Tensors(unittest.TestCase):
    device = 'cpu'

    def setUp(self):
        self.seed = contract.seed(self.id())
        self.rng = contract.Rng(self.seed)

    def route_and_check(self, fields, with_bias, with_map, m, extras=True):
        e = 64
        fields = dict(dict(num_experts=e, top_k=6, block_m=8, max_tokens=300, flags=0), **fields)
        fields['flags'] |= amr.FLAG_TAIL_FILL  # every element of the plan is then part of the result
        router = amr.Router(**fields)
        values = contract.separated_logits(self.rng, m, e)
        dtype = {amr.LogitsType.F32: torch.float32, amr.LogitsType.BF16: torch.bfloat16,
                 amr.LogitsType.F16: torch.float16}[router.params['logits_type']]
        bias = [((self.rng.next() % 17) - 8) / 8 for _ in range(e)] if with_bias else None
        emap = [int(self.rng.next() % 40) - 8 for _ in range(e)] if with_map else None
        logits = logits_tensor(values, m, e, dtype, self.device)
        bias_tensor = None if bias is None else torch.tensor(bias, device=self.device)
        emap_tensor = None if emap is None else torch.tensor(emap, dtype=torch.int32, device=self.device)
        if self.device != 'cpu':
            poison_allocator()
        r = amr.route(logits, router, correction_bias=bias_tensor, expert_map=emap_tensor, extras=extras)
        k, z = router.params['top_k'], router.sizes
        self.assertEqual((r.topk_ids.shape, r.topk_weights.shape), ((m, k), (m, k)))
        self.assertEqual((r.topk_ids.dtype, r.topk_weights.dtype), (torch.int32, torch.float32))
        self.assertEqual(r.sorted_token_ids.shape, (z['sorted_token_ids'],))
        self.assertEqual(r.expert_ids.shape, (z['expert_ids'],))
        self.assertEqual(r.num_tokens_post_padded.shape, (1,))
        self.assertEqual(r.topk_ids.device.type, torch.device(self.device).type)
        if extras:
            self.assertEqual((r.expert_counts.shape, r.expert_offsets.shape, r.pair_to_sorted.shape),
                             ((z['expert_counts'],), (z['expert_offsets'],), (m, k)))
        else:
            self.assertEqual((r.expert_counts, r.expert_offsets, r.pair_to_sorted), (None, None, None))
        out = outputs(r)
        expected = (None if router.params['flags'] & amr.FLAG_SHARED_EXPERT else
                    contract.flavour_expectation(router.params, m, values, bias))
        why = contract.check(router.params, m, values, out, poison=None, expected=expected, expert_map=emap)
        self.assertIsNone(why, f'M = {m}, seed {self.seed}' + (f', {streams()}' if self.device != 'cpu' else ''))
        live = out['num_tokens_post_padded']
        if m:
            self.assertEqual(set(out['sorted_token_ids'][live:]) - {m * k}, set(), 'the tail is not the sentinel')
            self.assertEqual(set(out['expert_ids'][live // fields['block_m']:]) - {-1}, set(), 'the tail is not -1')
        else:  # the library writes num_tokens_post_padded only; route() gives zero-filled arrays
            for name in amr.Routing._fields:
                self.assertEqual(set(flat(getattr(r, name))) - {0}, set(), f'{name} of M = 0 is not zero-filled')
        return router, r

    def test_every_flavour(self):
        for fields, with_bias, with_map in FLAVOURS:
            for m in (1, 5, 37, 300):
                with self.subTest(fields=fields, m=m, seed=self.seed):
                    self.route_and_check(fields, with_bias, with_map, m)
        self.route_and_check({}, False, False, 20, extras=False)
        self.route_and_check({}, False, False, 0)

    def test_shapes_and_types_are_checked(self):
        router = amr.Router(8, 2, 4, 16)
        cases = [(torch.zeros(3, 7), '(3, 7)'), (torch.zeros(24), '(24,)'), (torch.zeros(2, 3, 8), '(2, 3, 8)'),
                 (torch.zeros(3, 8, dtype=torch.bfloat16), 'bfloat16')]
        if self.device != 'cpu':  # the CPU reference copies the rows
            cases.append((torch.zeros(8, 3).t(), 'strides'))
        for logits, text in cases:
            with self.subTest(text=text):
                with self.assertRaises(amr.Error) as caught:
                    amr.route(logits.to(self.device), router)
                self.assertEqual(caught.exception.status, amr.Status.INVALID_ARGUMENT)
                self.assertIn(text, str(caught.exception))
        with self.assertRaises(amr.Error) as caught:
            amr.route(torch.zeros(17, 8, device=self.device), router)
        self.assertEqual(caught.exception.status, amr.Status.NUM_TOKENS)
        biased = amr.Router(8, 2, 4, 16, scoring='sigmoid', flags=amr.FLAG_CORRECTION_BIAS)
        for bias, text in ((None, 'pass correction_bias'), (torch.zeros(7, device=self.device), '(7,)'),
                           (torch.zeros(8, dtype=torch.float64, device=self.device), 'float64')):
            with self.subTest(text=text):
                with self.assertRaises(amr.Error) as caught:
                    amr.route(torch.zeros(3, 8, device=self.device), biased, correction_bias=bias)
                self.assertIn(text, str(caught.exception))

    def test_out_of_another_call_is_refused(self):
        """out= takes only a Routing route() made on the GPU for a call like
        this one; anything else is refused before the launch."""
        router = amr.Router(8, 2, 4, 16)
        x = torch.zeros(3, 8, device=self.device)
        made = amr.route(x, router)
        others = [('a tuple', tuple(made)), ('a Routing made by hand', amr.Routing(*made)),
                  ('another router', amr.route(x, amr.Router(8, 2, 4, 16))),
                  ('other tokens', amr.route(x[:2], router)), ('other extras', amr.route(x, router, extras=False))]
        for what, out in others:
            with self.subTest(what=what):
                with self.assertRaises(amr.Error) as caught:
                    amr.route(x, router, out=out)
                self.assertEqual(caught.exception.status, amr.Status.INVALID_ARGUMENT)
                self.assertIn('out=', str(caught.exception))

    def test_the_op_and_its_fake(self):
        from alphamoe_router import torch_ops
        router = amr.Router(64, 6, 8, 40, flags=amr.FLAG_TAIL_FILL)
        x = logits_tensor(contract.separated_logits(self.rng, 33, 64), 33, 64, torch.float32, self.device)
        via_op = torch_ops.route(x, router)
        direct = amr.route(x, router)
        for name in amr.Routing._fields:
            self.assertTrue(torch.equal(getattr(via_op, name), getattr(direct, name)), name)
        torch.library.opcheck(torch.ops.alphamoe.route.default, (x, None, None, router._op_params))

    def test_compiled_fullgraph(self):
        router = amr.Router(64, 6, 8, 300, flags=amr.FLAG_TAIL_FILL)
        weight = torch.randn(32, 64, device=self.device)

        def layer(h):
            r = amr.route(h @ weight, router)
            return r.topk_weights * 2, r.topk_ids, r.sorted_token_ids, r.num_tokens_post_padded

        backend = 'aot_eager' if self.device == 'cpu' else 'inductor'
        compiled = torch.compile(layer, fullgraph=True, backend=backend, dynamic=True)
        for m in (5, 37, 200):
            h = torch.randn(m, 32, device=self.device)
            for got, want in zip(compiled(h), layer(h)):
                self.assertTrue(torch.equal(got, want), f'M = {m}')

    def test_drop_ins_follow_the_engines_conventions(self):
        from alphamoe_router import sglang, vllm
        e, k, m = 64, 6, 37
        for block in (16, 64):
            values = contract.separated_logits(self.rng, m, e)
            logits = logits_tensor(values, m, e, torch.float32, self.device)
            hidden = torch.zeros(m, 8, device=self.device)
            weights, ids, token_expert_indices = vllm.fused_topk(hidden, logits, k, True)
            self.assertEqual((weights.dtype, ids.dtype, token_expert_indices.dtype),
                             (torch.float32, torch.int32, torch.int32))
            self.assertEqual(token_expert_indices.tolist(), [[j * m + i for j in range(k)] for i in range(m)])
            sorted_ids, expert_ids, live = vllm.moe_align_block_size(ids, block, e)
            params = dict(num_experts=e, top_k=k, block_m=block)
            out = dict(topk_ids=flat(ids), topk_weights=flat(weights), sorted_token_ids=flat(sorted_ids),
                       expert_ids=flat(expert_ids), num_tokens_post_padded=int(live[0]))
            self.assertIsNone(contract.check(params, m, values, out, poison=None), f'block {block}')
            self.assertEqual(set(flat(sorted_ids)[int(live[0]):]) - {m * k}, set())
            # The same plan for ids that were not routed here, and for a view of them.
            other = ids.clone()
            for given in (other, ids[0:m]):
                again = vllm.moe_align_block_size(given, block, e)
                for a, b in zip(again, (sorted_ids, expert_ids, live)):
                    self.assertTrue(torch.equal(a, b))
            self.assertTrue(torch.equal(sglang.moe_align_block_size(other, block, e)[0], sorted_ids))
        # Expert parallelism, vLLM's way: the plan of every global expert,
        # then other ranks' blocks -1; with ignore_invalid_experts left out.
        emap = torch.tensor([g - 16 if 16 <= g < 40 else -1 for g in range(e)], dtype=torch.int32, device=self.device)
        sorted_ids, expert_ids, live = vllm.moe_align_block_size(ids, 16, e, expert_map=emap)
        plain = vllm.moe_align_block_size(ids.clone(), 16, e)
        self.assertTrue(torch.equal(sorted_ids, plain[0]))
        blocks = int(live[0]) // 16
        self.assertEqual(flat(expert_ids)[:blocks], [int(emap[b]) for b in flat(plain[1])[:blocks]])
        local = vllm.moe_align_block_size(ids, 16, e, expert_map=emap, ignore_invalid_experts=True)
        params = dict(num_experts=e, top_k=k, block_m=16, flags=amr.FLAG_EXPERT_MAP, local_expert_count=e)
        out = dict(topk_ids=flat(ids), topk_weights=flat(weights), sorted_token_ids=flat(local[0]),
                   expert_ids=flat(local[1]), num_tokens_post_padded=int(local[2][0]))
        self.assertIsNone(contract.check(params, m, values, out, poison=None, expert_map=emap.tolist()))
        # SGLang: padded tokens' ids are -1 and out of the plan.
        w2, ids2 = sglang.fused_topk(hidden, logits, k, True, num_token_non_padded=torch.tensor(30, device=self.device))
        self.assertEqual(flat(ids2[30:]), [-1] * (7 * k))
        self.assertTrue(torch.equal(ids2[:30], ids[:30]))
        sorted2, _, live2 = sglang.moe_align_block_size(ids2, 16, e)
        pairs = [p for p in flat(sorted2)[:int(live2[0])] if p != m * k]
        self.assertEqual(sorted(pairs), list(range(30 * k)), 'the padded tokens\' pairs are in the plan')

    def test_grouped_drop_ins(self):
        from alphamoe_router import sglang, vllm
        e, k, m = 64, 8, 21
        values = contract.separated_logits(self.rng, m, e)
        logits = logits_tensor(values, m, e, torch.float32, self.device)
        bias = [((self.rng.next() % 17) - 8) / 8 for _ in range(e)]
        params = dict(num_experts=e, top_k=k, block_m=16, scoring=1, num_groups=8, topk_groups=4,
                      routed_scaling_factor=2.5)
        expected = contract.flavour_expectation(params, m, values, bias)
        w, ids = vllm.grouped_topk(None, logits, k, True, 8, 4, 'sigmoid', 2.5,
                                   torch.tensor(bias, device=self.device))
        self.assertEqual(flat(ids), expected[0])
        self.assertTrue(all(abs(a - b) <= 1e-5 for a, b in zip(flat(w), expected[1])))
        w2, ids2 = sglang.biased_grouped_topk(None, logits, torch.tensor(bias, device=self.device), k, True, 8, 4,
                                              routed_scaling_factor=2.5)
        self.assertEqual(flat(ids2), expected[0])
        unscaled = contract.flavour_expectation(dict(params, routed_scaling_factor=1.0), m, values, bias)
        self.assertTrue(all(abs(a - b) <= 4e-6 for a, b in zip(flat(w2), unscaled[1])),
                        'SGLang scales the output, not the weights, unless asked')


@unittest.skipIf(GPU_WHY, GPU_WHY or '')
class GpuTensors(Tensors):
    device = 'cuda'

    def test_matches_the_cpu_reference_bitwise(self):
        for fields, with_bias, with_map in FLAVOURS:
            with self.subTest(fields=fields, seed=self.seed):
                e, m = 64, 257
                fields = dict(dict(num_experts=e, top_k=6, block_m=8, max_tokens=300, flags=amr.FLAG_TAIL_FILL),
                              **fields)
                fields['flags'] |= amr.FLAG_TAIL_FILL
                router = amr.Router(**fields)
                values = contract.random_logits(self.rng, m, e)
                dtype = {0: torch.float32, 1: torch.bfloat16, 2: torch.float16}[int(router.params['logits_type'])]
                x = logits_tensor(values, m, e, dtype, 'cpu')
                bias = torch.randn(e) if with_bias else None
                emap = torch.randint(-8, 32, (e,), dtype=torch.int32) if with_map else None
                host = amr.route(x, router, correction_bias=bias, expert_map=emap)
                gpu = amr.route(x.cuda(), router, correction_bias=None if bias is None else bias.cuda(),
                                expert_map=None if emap is None else emap.cuda())
                for name in amr.Routing._fields:
                    a, b = getattr(host, name), getattr(gpu, name).cpu()
                    if name == 'topk_weights':
                        tol = 4e-6 * max(1.0, router.params['routed_scaling_factor'])
                        self.assertLessEqual(float((a - b).abs().max()), tol, name)
                    else:
                        self.assertTrue(torch.equal(a, b), f'{name} differs from the CPU reference')

    def test_streams_devices_and_workspaces(self):
        router = amr.Router(64, 6, 8, 64)
        x = torch.randn(50, 64, device='cuda')
        want = amr.route(x, router)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            got = amr.route(x, router)
        torch.cuda.current_stream().wait_stream(side)
        self.assertTrue(torch.equal(got.topk_ids, want.topk_ids))
        from alphamoe_router import _arrays
        keys = {key[:2] for key in _arrays._workspaces}
        self.assertIn((0, side.cuda_stream), keys, 'the side stream has no workspace of its own')
        self.assertIn((0, torch.cuda.default_stream().cuda_stream), keys)

    def assert_same(self, got, want, what):
        """Every output of two Routings of tensors equal, bit for bit."""
        for name in amr.Routing._fields:
            a, b = getattr(got, name), getattr(want, name)
            self.assertEqual(a is None, b is None, f'{what}: {name}')
            if a is not None:
                self.assertEqual((a.shape, a.dtype), (b.shape, b.dtype), f'{what}: {name}')
                why = first_difference(flat(a), flat(b))
                self.assertIsNone(why, f'{what}: {name}: {why} ({streams()})')

    def test_out_routes_in_place(self):
        """route(..., out=r) writes r's own arrays, as a fresh call would, and
        returns r; a refused call leaves them as they were."""
        for extras in (True, False):
            with self.subTest(extras=extras, seed=self.seed):
                router = amr.Router(64, 6, 8, 128, flags=amr.FLAG_TAIL_FILL)
                r = amr.route(torch.randn(100, 64, device='cuda'), router, extras=extras)
                arrays = [(name, getattr(r, name)) for name in amr.Routing._fields if getattr(r, name) is not None]
                addresses = [a.data_ptr() for _, a in arrays]
                for _, a in arrays:  # poison: every element must be written again
                    a.view(torch.int32).fill_(contract.POISON)
                fresh = torch.randn(100, 64, device='cuda')
                self.assertIs(amr.route(fresh, router, extras=extras, out=r), r)
                self.assertEqual([a.data_ptr() for _, a in arrays], addresses)
                self.assertTrue(all(getattr(r, name) is a for name, a in arrays))
                self.assert_same(r, amr.route(fresh, router, extras=extras), 'out=')
                before = [a.clone() for _, a in arrays]
                with self.assertRaises(amr.Error):
                    amr.route(fresh[:99], router, extras=extras, out=r)
                with self.assertRaises(amr.Error):
                    amr.route(fresh.cpu(), router, extras=extras, out=r)
                torch.cuda.synchronize()
                for (name, a), b in zip(arrays, before):
                    self.assertTrue(torch.equal(a, b), f'a refused call wrote {name}')

    def test_cuda_graph_replays_one_kernel(self):
        router = amr.Router(64, 6, 8, 128, flags=amr.FLAG_TAIL_FILL)
        static_in = torch.randn(100, 64, device='cuda')
        amr.route(static_in, router)  # warm up, as torch asks before a capture
        try:
            graph = torch.cuda.CUDAGraph(keep_graph=True)  # the captured graph stays readable
        except TypeError:
            graph = None
            print(f'torch {torch.__version__} cannot keep a captured graph (keep_graph): its nodes go unchecked')
        kept = graph is not None
        if not kept:
            graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = amr.route(static_in, router)
        if kept:
            from alphamoe_router import _cuda
            kinds = _cuda.driver().graph_node_types(graph.raw_cuda_graph())
            print(f'captured graph: CUgraphNodeType of each node {kinds}')
            self.assertEqual(kinds, [0], 'the captured route() is not one kernel node (CU_GRAPH_NODE_TYPE_KERNEL)')
        for replay in range(3):
            fresh = torch.randn(100, 64, device='cuda')
            static_in.copy_(fresh)
            graph.replay()
            self.assert_same(static_out, amr.route(fresh, router), f'replay {replay}')

    def test_compiled_with_cuda_graphs(self):
        router = amr.Router(64, 6, 8, 256, flags=amr.FLAG_TAIL_FILL)
        weight = torch.randn(32, 64, device='cuda')

        def layer(h):
            r = amr.route(h @ weight, router)
            # Elementwise only: the order of a reduction is the compiler's
            # choice, so its last bit could differ from eager torch's.
            return r.topk_weights * 2, r.topk_ids, r.sorted_token_ids, r.expert_ids, r.num_tokens_post_padded

        names = ('topk_weights * 2', 'topk_ids', 'sorted_token_ids', 'expert_ids', 'num_tokens_post_padded')
        compiled = torch.compile(layer, fullgraph=True, mode='reduce-overhead')
        for call in range(4):
            h = torch.randn(96, 32, device='cuda')
            got = [t.clone() for t in compiled(h)]
            for name, a, b in zip(names, got, layer(h)):
                why = first_difference(flat(a), flat(b))
                self.assertIsNone(why, f'call {call}: {name}: {why} ({streams()})')

    def check_foreign(self, to_array, array_type, to_numpy, side_stream, stream_of):
        """route() of another library's CUDA array, on the default stream and
        on a side stream: that library's arrays back, bit for bit those of
        the same logits as a torch tensor, and the CPU reference's within
        the contract's bound; the launch used the current stream."""
        from alphamoe_router import _arrays
        router = amr.Router(64, 6, 8, 64, flags=amr.FLAG_TAIL_FILL)
        x = torch.randn(40, 64)
        host = amr.route(x, router)
        gpu = amr.route(x.cuda(), router)
        for where, context in (('default stream', contextlib.nullcontext), ('side stream', side_stream)):
            with context():
                got = amr.route(to_array(x.numpy()), router)
                stream = stream_of()
                values = {name: to_numpy(getattr(got, name)) for name in amr.Routing._fields}
            self.assertIn((0, stream), {key[:2] for key in _arrays._workspaces},
                          f'{where}: no workspace of the current stream {stream:#x}: the launch used another')
            for name in amr.Routing._fields:
                self.assertIsInstance(getattr(got, name), array_type, name)
                self.assertEqual(tuple(values[name].shape), tuple(getattr(gpu, name).shape), f'{where}: {name}')
                flat_value = values[name].reshape(-1).tolist()
                why = first_difference(flat_value, flat(getattr(gpu, name)))
                self.assertIsNone(why, f'{where}: {name} differs from that of a torch tensor: {why} '
                                       f'(launched on stream {stream:#x})')
                # The contract's bound between the GPU and the CPU reference.
                tolerance = 4e-6 if name == 'topk_weights' else 0.0
                why = first_difference(flat_value, flat(getattr(host, name)), tolerance)
                self.assertIsNone(why, f'{where}: {name} differs from the CPU reference: {why}')

    def test_cupy(self):
        try:
            import cupy
        except ImportError:
            self.skipTest('CuPy is not installed')
        self.check_foreign(cupy.asarray, cupy.ndarray, cupy.asnumpy, lambda: cupy.cuda.Stream(non_blocking=True),
                           lambda: cupy.cuda.get_current_stream().ptr)

    def test_jax(self):
        os.environ.setdefault('XLA_PYTHON_CLIENT_PREALLOCATE', 'false')
        try:
            import jax
            import jax.numpy as jnp
            import numpy
        except ImportError as e:
            self.skipTest(f'{e.name} is not installed')
        if not any(d.platform == 'gpu' for d in jax.devices()):
            self.skipTest('JAX sees no GPU')
        # torch makes the outputs of a JAX array, on its current stream.
        self.check_foreign(jnp.asarray, jax.Array, numpy.asarray, lambda: torch.cuda.stream(torch.cuda.Stream()),
                           lambda: torch.cuda.current_stream().cuda_stream)


if __name__ == '__main__':
    unittest.main()
