"""An MoE layer whose experts run as Triton GEMMs over the router's block
plan, read the way vLLM's fused_moe reads moe_align_block_size's output:
one program per block_m rows of sorted_token_ids (and per BLOCK_N output
columns), programs past num_tokens_post_padded return at once, expert_ids
gives the block's expert, and padding rows (the sentinel M * k) are
masked. Pair p = t * k + j reads input row t (row p of the intermediate in
the second GEMM) and writes output row p; the top-k weights scale the
second GEMM's rows; summing each token's k rows gives the layer's output.

    layer = TritonMoE(hidden=256, intermediate=128, num_experts=16, top_k=4, max_tokens=4096).cuda()
    y = layer(x)                      # x [M, 256], M <= 4096

Everything is fp32 with IEEE products, so that the test can hold it to
the plain torch MoE (reference_moe) closely.
"""
import math

import torch
import triton
import triton.language as tl

import alphamoe_router as amr


@triton.jit
def expert_gemm(a_ptr, w_ptr, c_ptr, topk_weights_ptr, sorted_token_ids_ptr, expert_ids_ptr,
                num_tokens_post_padded_ptr, N, K, num_pairs,
                stride_am, stride_ak, stride_we, stride_wn, stride_wk, stride_cm, stride_cn,
                A_ROWS_PER_PAIR: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C[p, :] = A[p // A_ROWS_PER_PAIR, :] @ W[expert of p].T (times p's weight)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    if pid_m * BLOCK_M >= tl.load(num_tokens_post_padded_ptr):
        return
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    pairs = tl.load(sorted_token_ids_ptr + rows)
    valid = pairs < num_pairs
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    a_rows = (pairs // A_ROWS_PER_PAIR).to(tl.int64)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + a_rows[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=valid[:, None] & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + expert * stride_we + cols[None, :] * stride_wn + ks[:, None] * stride_wk,
                    mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, w, input_precision='ieee')
    if MUL_ROUTED_WEIGHT:
        acc *= tl.load(topk_weights_ptr + pairs, mask=valid, other=0.0)[:, None]
    tl.store(c_ptr + pairs.to(tl.int64)[:, None] * stride_cm + cols[None, :] * stride_cn, acc,
             mask=valid[:, None] & (cols[None, :] < N))


def grouped_gemm(a, w, routing, block_m, a_rows_per_pair, mul_routed_weight):
    """[M * k, N]: every pair's row of A times its expert's W [E, N, K]."""
    pairs = routing.topk_ids.numel()
    n, k = w.shape[1], w.shape[2]
    c = torch.empty(pairs, n, dtype=torch.float32, device=a.device)
    block_n = 64
    grid = (routing.sorted_token_ids.shape[0] // block_m, triton.cdiv(n, block_n))
    expert_gemm[grid](a, w, c, routing.topk_weights, routing.sorted_token_ids, routing.expert_ids,
                      routing.num_tokens_post_padded, n, k, pairs,
                      a.stride(0), a.stride(1), w.stride(0), w.stride(1), w.stride(2), c.stride(0), c.stride(1),
                      A_ROWS_PER_PAIR=a_rows_per_pair, MUL_ROUTED_WEIGHT=mul_routed_weight,
                      BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=32)
    return c


class TritonMoE(torch.nn.Module):
    """Gate, router, SwiGLU experts (w1 [E, 2I, H], w2 [E, H, I])."""

    def __init__(self, hidden, intermediate, num_experts, top_k, max_tokens, block_m=16):
        super().__init__()
        self.top_k, self.block_m, self.intermediate = top_k, block_m, intermediate
        self.router = amr.Router(num_experts, top_k, block_m, max_tokens)
        self.gate = torch.nn.Parameter(torch.randn(num_experts, hidden) / math.sqrt(hidden))
        self.w1 = torch.nn.Parameter(torch.randn(num_experts, 2 * intermediate, hidden) / math.sqrt(hidden))
        self.w2 = torch.nn.Parameter(torch.randn(num_experts, hidden, intermediate) / math.sqrt(intermediate))

    def forward(self, x):
        m = x.shape[0]
        routing = amr.route(x @ self.gate.t(), self.router, extras=False)
        h = grouped_gemm(x, self.w1, routing, self.block_m, self.top_k, False)
        act = torch.nn.functional.silu(h[:, :self.intermediate]) * h[:, self.intermediate:]
        y = grouped_gemm(act, self.w2, routing, self.block_m, 1, True)
        return y.view(m, self.top_k, -1).sum(dim=1), routing


def reference_moe(x, gate, w1, w2, top_k):
    """The same layer in plain torch: softmax top-k, renormalized, each
    token through its experts one expert at a time. Returns (y, weights, ids)."""
    probs = torch.softmax(x @ gate.t(), dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    y = torch.zeros_like(x)
    intermediate = w2.shape[2]
    for e in range(gate.shape[0]):
        tokens, slots = (ids == e).nonzero(as_tuple=True)
        if tokens.numel():
            h = x[tokens] @ w1[e].t()
            act = torch.nn.functional.silu(h[:, :intermediate]) * h[:, intermediate:]
            y.index_add_(0, tokens, (act @ w2[e].t()) * weights[tokens, slots][:, None])
    return y, weights, ids
