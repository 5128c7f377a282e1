"""Drop-in replacements for vLLM's routing functions, same signatures, same
outputs (dtypes, shapes, the sentinel M * k padding sorted_token_ids, -1 for
blocks past the live length):

    from alphamoe_router.vllm import fused_topk, grouped_topk, moe_align_block_size

The selection functions route with one kernel launch that also plans the
blocks; moe_align_block_size of the ids they returned then costs nothing
when its block size is _dropin.block_size_hint (16), one launch otherwise.
Ids from elsewhere are planned with a few more kernels. sorted_token_ids
holds the router's capacity (no routing needs more), not vLLM's larger
bound; consumers read it up to num_tokens_post_padded.
"""
import torch

from . import _dropin


def fused_topk(hidden_states, gating_output, topk, renormalize, indices_type=None, scoring_func='softmax'):
    """(topk_weights fp32 [M, topk], topk_ids int32 (or indices_type)
    [M, topk], token_expert_indices int32 [M, topk]) of softmax or sigmoid
    scores, renormalized over the chosen experts when renormalize."""
    routing = _dropin.select(hidden_states, gating_output, topk, renormalize, scoring=scoring_func)
    ids = routing.topk_ids
    if indices_type is not None and indices_type != torch.int32:
        ids = ids.to(indices_type)
        _dropin.remember(ids, routing)
    m = gating_output.shape[0]
    return routing.topk_weights, ids, _dropin.token_expert_indices(m, topk, gating_output.device)


def grouped_topk(hidden_states, gating_output, topk, renormalize, num_expert_group=0, topk_group=0,
                 scoring_func='softmax', routed_scaling_factor=1.0, e_score_correction_bias=None):
    """(topk_weights fp32, topk_ids int32), [M, topk]: DeepSeek's grouped
    top-k (the correction bias needs sigmoid scoring)."""
    routing = _dropin.select(hidden_states, gating_output, topk, renormalize, scoring=scoring_func,
                             num_groups=num_expert_group, topk_groups=topk_group, scale=routed_scaling_factor,
                             bias=e_score_correction_bias)
    return routing.topk_weights, routing.topk_ids


def moe_align_block_size(topk_ids, block_size, num_experts, expert_map=None, pad_sorted_ids=False,
                         ignore_invalid_experts=False):
    """(sorted_token_ids int32 [capacity], expert_ids int32 [capacity /
    block_size], num_tokens_post_padded int32 [1]); the capacity is always
    a multiple of block_size, so pad_sorted_ids changes nothing."""
    return _dropin.align(topk_ids, block_size, num_experts, expert_map, ignore_invalid_experts)
