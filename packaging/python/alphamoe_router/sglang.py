"""Drop-in replacements for SGLang's routing functions, same signatures, same
outputs (dtypes, shapes, the sentinel M * k padding sorted_token_ids):

    from alphamoe_router.sglang import fused_topk, biased_grouped_topk, moe_align_block_size

As in alphamoe_router.vllm, the selection plans the blocks in the same
launch, and moe_align_block_size of its ids reuses that plan.
expert_location_dispatch_info and fused shared experts are not supported
(NotImplementedError).
"""
from . import _dropin


def _unsupported(num_fused_shared_experts, expert_location_dispatch_info):
    if num_fused_shared_experts:
        raise NotImplementedError('num_fused_shared_experts: fused shared experts are not supported')
    if expert_location_dispatch_info is not None:
        raise NotImplementedError('expert_location_dispatch_info: logical to physical expert maps are not supported')


def _mask_padded(topk_ids, num_token_non_padded):
    """Ids of tokens past num_token_non_padded (a tensor) become -1."""
    if num_token_non_padded is not None:
        import torch
        rows = torch.arange(topk_ids.shape[0], device=topk_ids.device)
        topk_ids.masked_fill_((rows >= num_token_non_padded).unsqueeze(1), -1)
    return topk_ids


def fused_topk(hidden_states, gating_output, topk, renormalize, num_token_non_padded=None,
               expert_location_dispatch_info=None):
    """(topk_weights fp32 [M, topk], topk_ids int32 [M, topk]) of softmax scores."""
    _unsupported(0, expert_location_dispatch_info)
    routing = _dropin.select(hidden_states, gating_output, topk, renormalize)
    return routing.topk_weights, _mask_padded(routing.topk_ids, num_token_non_padded)


def grouped_topk(hidden_states, gating_output, topk, renormalize, num_expert_group=0, topk_group=0,
                 num_fused_shared_experts=0, routed_scaling_factor=None, num_token_non_padded=None,
                 expert_location_dispatch_info=None, apply_routed_scaling_factor_on_output=False):
    """Grouped top-k of softmax scores (group score: its best probability)."""
    _unsupported(num_fused_shared_experts, expert_location_dispatch_info)
    scale = routed_scaling_factor if apply_routed_scaling_factor_on_output and routed_scaling_factor else 1.0
    routing = _dropin.select(hidden_states, gating_output, topk, renormalize, num_groups=num_expert_group,
                             topk_groups=topk_group, scale=scale)
    return routing.topk_weights, _mask_padded(routing.topk_ids, num_token_non_padded)


def biased_grouped_topk(hidden_states, gating_output, correction_bias, topk, renormalize, num_expert_group=0,
                        topk_group=0, num_fused_shared_experts=0, routed_scaling_factor=None,
                        num_token_non_padded=None, expert_location_dispatch_info=None,
                        apply_routed_scaling_factor_on_output=False):
    """DeepSeek-V3's routing: sigmoid scores, the bias choosing groups (sum of
    their two best) and experts, weights the unbiased scores."""
    _unsupported(num_fused_shared_experts, expert_location_dispatch_info)
    scale = routed_scaling_factor if apply_routed_scaling_factor_on_output and routed_scaling_factor else 1.0
    routing = _dropin.select(hidden_states, gating_output, topk, renormalize, scoring='sigmoid',
                             num_groups=num_expert_group, topk_groups=topk_group, scale=scale, bias=correction_bias)
    return routing.topk_weights, _mask_padded(routing.topk_ids, num_token_non_padded)


def moe_align_block_size(topk_ids, block_size, num_experts):
    """(sorted_token_ids int32 [capacity], expert_ids int32 [capacity /
    block_size], num_tokens_post_padded int32 [1]); ids of -1 are left out."""
    return _dropin.align(topk_ids, block_size, num_experts)
