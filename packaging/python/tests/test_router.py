"""The installed library through the ctypes module: the CPU reference
against the contract computed here, bad input, and a GPU route that
matches the reference or reports that there is no driver or device."""
import array
import ctypes
import unittest

import alphamoe_router as amr
import contract
import cuda_driver
from contract import POISON, POISON_WEIGHT

CASES = [  # (E, k, block_m, max_tokens, M, flags)
    (8, 2, 4, 5, 5, 0),
    (64, 6, 16, 40, 33, 0),
    (512, 10, 8, 20, 17, 0),
    (16, 16, 1, 9, 9, 0),
    (128, 8, 64, 100, 100, amr.FLAG_SHARED_EXPERT),
    (7, 3, 256, 3, 2, amr.FLAG_SHARED_EXPERT),
]


def host_outputs(plan):
    return {
        'topk_ids': plan.topk_ids, 'topk_weights': plan.topk_weights,
        'sorted_token_ids': plan.sorted_token_ids_buffer, 'expert_ids': plan.expert_ids_buffer,
        'num_tokens_post_padded': plan.num_tokens_post_padded, 'expert_counts': plan.expert_counts,
        'expert_offsets': plan.expert_offsets, 'pair_to_sorted': plan.pair_to_sorted,
    }


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
                why = contract.check(router.params, m, logits, host_outputs(plan))
                self.assertIsNone(why, f'seed {seed}')
                self.assertEqual(router.route_host(logits).topk_ids, plan.topk_ids,
                                 'num_tokens taken from the logits')

    def test_inputs_of_every_kind(self):
        router = amr.Router(8, 2, 4, 2)
        values = [float((i * 5) % 8) for i in range(16)]
        expected = router.route_host(values).topk_ids
        self.assertEqual(router.route_host(array.array('f', values)).topk_ids, expected)
        self.assertEqual(router.route_host(tuple(int(v) for v in values)).topk_ids, expected)
        try:
            import numpy
        except ImportError:
            return
        self.assertEqual(router.route_host(numpy.array(values, dtype=numpy.float64).reshape(2, 8)).topk_ids, expected)
        self.assertEqual(list(router.route_host(values).as_numpy()['topk_ids']), expected)

    def test_zero_tokens_give_an_empty_plan(self):
        router = amr.Router(32, 4, 8, 16)
        plan = router.plan()
        plan.fill(POISON, 0.0)
        router.route_host_into([], plan, 0)
        self.assertEqual(plan.num_tokens_post_padded, 0)
        self.assertEqual((plan.topk_ids, plan.sorted_token_ids), ([], []))
        self.assertTrue(all(x == POISON for x in plan.sorted_token_ids_buffer), 'M = 0 wrote the plan')


class BadInput(unittest.TestCase):
    def test_errors_carry_the_status_and_message(self):
        with self.assertRaises(amr.Error) as caught:
            amr.Router(64, 0, 16, 8)
        self.assertEqual(caught.exception.status, amr.Status.TOP_K)
        self.assertTrue(str(caught.exception).startswith('ALPHAMOE_ERROR_TOP_K'), str(caught.exception))
        for args, kwargs, status in (((513, 4, 16, 8), {}, amr.Status.NUM_EXPERTS),
                                     ((64, 4, 0, 8), {}, amr.Status.BLOCK_M),
                                     ((64, 1, 16, 8), {'flags': amr.FLAG_SHARED_EXPERT}, amr.Status.SHARED_EXPERT),
                                     ((2**40, 4, 16, 8), {}, amr.Status.NUM_EXPERTS),
                                     ((64, 4, 16, 8), {'flags': 0x100}, amr.Status.FLAGS)):
            with self.subTest(args=args, kwargs=kwargs):
                with self.assertRaises(amr.Error) as caught:
                    amr.Router(*args, **kwargs)
                self.assertEqual(caught.exception.status, status)

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
        # and once with the routing flavours, in the header's order.
        expected = [f'{family}_{mode}{flavours}' for flavours in ('', '_flavours')
                    for family in ('tiny', 'small', 'large') for mode in ('routed', 'shared')]
        self.assertEqual(names, expected)
        for i, name in enumerate(names):
            archs = amr.kernel_images(i)
            self.assertTrue(archs and set(archs) <= {90, 100, 103}, f'{name}: {archs}')

    def test_structures_match_the_installed_header(self):
        layout = header_layout()
        if layout is None:
            self.skipTest('no C compiler or pkg-config to read the header\'s layout')
        from alphamoe_router import _ffi
        for name, structure in (('alphamoe_params', _ffi.Params), ('alphamoe_extent', _ffi.Extent),
                                ('alphamoe_sizes', _ffi.Sizes), ('alphamoe_buffers', _ffi.Buffers),
                                ('alphamoe_device_attributes', _ffi.DeviceAttributes),
                                ('alphamoe_selection', _ffi.Selection)):
            for field, _ in structure._fields_:
                self.assertEqual(getattr(structure, field).offset, layout[f'{name}.{field}'], f'{name}.{field}')
            # A newer header may append fields; this module then knows a prefix.
            self.assertLessEqual(ctypes.sizeof(structure), layout[name], name)


def header_layout():
    """{'struct': size, 'struct.field': offset} of the installed header, from
    packaging/c/struct_layout.c; None without cc or pkg-config."""
    import os
    import shutil
    import subprocess
    import tempfile
    if not shutil.which('cc') or not shutil.which('pkg-config'):
        return None
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'c', 'struct_layout.c')
    cflags = subprocess.run(['pkg-config', '--cflags', 'alphamoe-router'], check=True,
                            stdout=subprocess.PIPE, text=True).stdout.split()
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, 'struct_layout')
        subprocess.run(['cc', *cflags, source, '-o', exe], check=True)
        out = subprocess.run([exe], check=True, stdout=subprocess.PIPE, text=True).stdout
    return {name: int(value) for name, value in (line.split() for line in out.splitlines())}


class Gpu(unittest.TestCase):
    def test_route_matches_the_reference_or_reports_no_gpu(self):
        seed = contract.seed('Gpu.test_route_matches_the_reference_or_reports_no_gpu')
        rng = contract.Rng(seed)
        e, k, bm, m = 128, 8, 16, 300
        router = amr.Router(e, k, bm, m)
        z = router.sizes
        logits = contract.random_logits(rng, m, e)
        host = router.route_host(logits, m)
        state, cuda, why = cuda_driver.open_driver()

        if state != cuda_driver.READY:
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
            print(f'GPU part skipped: {why}; the route call said "{caught.exception}"')
            return

        fill = 0x5A
        allocated = []

        def alloc(nbytes, value):
            allocated.append(cuda.alloc(nbytes, value))
            return allocated[-1]

        try:
            d_logits = cuda.upload((ctypes.c_float * len(logits))(*logits))
            allocated.append(d_logits)
            d = {name: alloc(4 * z[name], fill) for name in
                 ('topk_ids', 'topk_weights', 'sorted_token_ids', 'expert_ids', 'expert_counts',
                  'expert_offsets', 'pair_to_sorted')}
            d_live = alloc(4, fill)
            d_workspace = alloc(z['workspace_bytes'], 0)
            router.route(m, d_logits, amr.DeviceBuffers(
                topk_ids=d['topk_ids'], topk_weights=d['topk_weights'],
                sorted_token_ids=d['sorted_token_ids'], sorted_token_ids_capacity=z['sorted_token_ids'],
                expert_ids=d['expert_ids'], expert_ids_capacity=z['expert_ids'],
                num_tokens_post_padded=d_live, workspace=d_workspace, workspace_bytes=z['workspace_bytes'],
                expert_counts=d['expert_counts'], expert_offsets=d['expert_offsets'],
                pair_to_sorted=d['pair_to_sorted']))
            cuda.synchronize()
            gpu = {name: cuda.download(d[name], ctypes.c_float if name == 'topk_weights' else ctypes.c_int32, z[name])
                   for name in d}
            gpu['num_tokens_post_padded'] = cuda.download(d_live, ctypes.c_int32, 1)[0]
        finally:
            for address in allocated:
                cuda.free(address)
        why_not = contract.check(router.params, m, logits, gpu)
        self.assertIsNone(why_not, f'GPU result, seed {seed}')
        self.assertEqual(gpu['topk_ids'], host.topk_ids, f'GPU and CPU ids differ (seed {seed})')
        self.assertEqual(gpu['sorted_token_ids'][:host.num_tokens_post_padded], host.sorted_token_ids)
        self.assertEqual(gpu['expert_ids'][:len(host.expert_ids)], host.expert_ids)
        self.assertEqual(gpu['pair_to_sorted'], host.pair_to_sorted)
        print(f'GPU route of {m} tokens matches the CPU reference ({why})')


if __name__ == '__main__':
    unittest.main()
