"""The example MoE layer (examples/triton_moe.py): the router's plan fed to
a Triton expert GEMM as vLLM's fused_moe reads it, against a plain torch
MoE, eagerly and replayed from a CUDA graph. Skips, saying why, without
torch, Triton or a GPU."""
import os
import sys
import unittest

import contract

try:
    import torch
    import triton  # noqa: F401
except ImportError as e:
    WHY = f'{e.name} is not installed'
else:
    WHY = None if torch.cuda.is_available() else 'torch sees no CUDA device'


@unittest.skipIf(WHY, WHY or '')
class TritonConsumer(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, os.path.join(contract.SOURCE, 'packaging', 'python', 'examples'))
        try:
            import triton_moe
        finally:
            sys.path.pop(0)
        self.triton_moe = triton_moe
        seed = contract.seed(self.id())
        torch.manual_seed(seed % 2**63)
        torch.backends.cuda.matmul.allow_tf32 = False

    def check(self, layer, x, y, routing):
        m = self.triton_moe
        want_y, want_w, want_ids = m.reference_moe(x, layer.gate, layer.w1, layer.w2, layer.top_k)
        self.assertTrue(torch.equal(routing.topk_ids, want_ids.to(torch.int32)), 'the experts differ')
        self.assertLessEqual(float((routing.topk_weights - want_w).abs().max()), 4e-6)
        scale = float(want_y.abs().max())
        error = float((y - want_y).abs().max())
        print(f'M = {x.shape[0]}: largest difference {error:.3g} of values up to {scale:.3g}')
        # fp32 with IEEE products on both sides: only the order of additions differs.
        self.assertLessEqual(error, 1e-5 * max(scale, 1.0))

    def test_layer_matches_plain_torch(self):
        layer = self.triton_moe.TritonMoE(hidden=256, intermediate=128, num_experts=16, top_k=4,
                                          max_tokens=4096).cuda()
        with torch.no_grad():
            for m in (1, 7, 64, 1000, 4096):
                x = torch.randn(m, 256, device='cuda')
                y, routing = layer(x)
                self.check(layer, x, y, routing)

    def test_layer_replayed_from_a_cuda_graph(self):
        layer = self.triton_moe.TritonMoE(hidden=128, intermediate=64, num_experts=8, top_k=2, max_tokens=256,
                                          block_m=32).cuda()
        static_x = torch.randn(200, 128, device='cuda')
        with torch.no_grad():
            layer(static_x)  # compiles the kernels before the capture
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_y, static_routing = layer(static_x)
            for _ in range(3):
                static_x.copy_(torch.randn(200, 128, device='cuda'))
                graph.replay()
                torch.cuda.synchronize()
                self.check(layer, static_x, static_y, static_routing)


if __name__ == '__main__':
    unittest.main()
