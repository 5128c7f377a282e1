"""What the vLLM- and SGLang-shaped functions share: one route() call that
produces the ids, the weights and the plan together, kept so that the
engine's later moe_align_block_size of those very ids costs nothing (or one
more launch for another block size), and a plan for ids that did not come
from here.
"""
import torch

from . import (FLAG_CORRECTION_BIAS, FLAG_EXPERT_MAP, FLAG_NO_RENORMALIZE, FLAG_TAIL_FILL, MAX_EXPERTS, Router,
               _arrays, _invalid, route)

# The block size the selection functions plan for; moe_align_block_size of
# another block size routes the same logits once more.
block_size_hint = 16

_arrays._torch_setup()
_LOGITS_TYPES = {torch.float32: 'f32', torch.bfloat16: 'bf16', torch.float16: 'f16'}
_routers = {}
_cache = {}
_last = None  # (topk_ids, its _version, logits, bias, fields, block_m, routing)


def router(**fields):
    """A Router of these fields, made once."""
    key = tuple(sorted(fields.items()))
    r = _routers.get(key)
    if r is None:
        r = _routers[key] = Router(**fields)
    return r


def _rows(logits, num_experts):
    """The logits as contiguous rows (what the engines hand over already)."""
    if logits.dim() != 2 or logits.shape[1] != num_experts:
        raise _invalid(f'gating_output of shape {tuple(logits.shape)}: expected (M, {num_experts})')
    return logits if logits.is_contiguous() else logits.contiguous()


def select(hidden_states, gating_output, topk, renormalize, scoring='softmax', num_groups=0, topk_groups=0,
           scale=1.0, bias=None):
    """Routes gating_output [M, E]; returns the Routing, whose plan is kept
    for moe_align_block_size of its topk_ids."""
    global _last
    if hidden_states is not None and hidden_states.shape[0] != gating_output.shape[0]:
        raise _invalid(f'hidden_states hold {hidden_states.shape[0]} tokens, gating_output '
                       f'{gating_output.shape[0]}: the same tokens expected')
    if gating_output.dtype not in _LOGITS_TYPES:
        raise _invalid(f'gating_output is {gating_output.dtype}: float32, bfloat16 or float16 expected')
    m, e = gating_output.shape[0], gating_output.shape[-1]
    logits = _rows(gating_output, e)
    if bias is not None and bias.dtype != torch.float32:
        bias = bias.float()
    fields = dict(num_experts=e, top_k=topk, scoring=scoring, logits_type=_LOGITS_TYPES[logits.dtype],
                  num_groups=num_groups or 0, topk_groups=topk_groups or 0, routed_scaling_factor=float(scale or 1.0),
                  flags=FLAG_TAIL_FILL | (0 if renormalize else FLAG_NO_RENORMALIZE) |
                  (FLAG_CORRECTION_BIAS if bias is not None else 0))
    block = block_size_hint
    r = router(block_m=block, max_tokens=m, **fields)
    if torch.compiler.is_compiling() or not logits.is_cuda:
        return route(logits, r, correction_bias=bias, extras=False)
    # Outputs of their own: an in-place change of the weights leaves the
    # ids' version, which tells whether the kept plan is still theirs.
    routing = _arrays._route_torch(logits, r, bias, None, False, separate=True)
    _last = (routing.topk_ids, routing.topk_ids._version, logits, bias, fields, block, routing)
    return routing


def remember(ids, routing):
    """ids (e.g. topk_ids converted to another type) stand for routing's."""
    global _last
    if _last is not None and _last[6] is routing:
        _last = (ids, ids._version) + _last[2:]


def cached(key, make):
    value = _cache.get(key)
    if value is None:
        if len(_cache) > 1024:
            _cache.clear()
        value = _cache[key] = make()
    return value


def token_expert_indices(m, k, device):
    """[M, k] int32 with j * M + i at [i, j] (vLLM's third output of fused_topk)."""
    return cached(('token_expert_indices', m, k, device),
                  lambda: torch.arange(m * k, dtype=torch.int32, device=device).view(k, m).t().contiguous())


def align(topk_ids, block_size, num_experts, expert_map=None, ignore_invalid_experts=False):
    """(sorted_token_ids, expert_ids, num_tokens_post_padded) of topk_ids
    [M, k]. expert_map (vLLM's expert parallelism): without
    ignore_invalid_experts the plan covers every global expert and the
    blocks of other ranks' experts get -1; with it, their pairs are left
    out and expert_ids are local ids."""
    if topk_ids.dim() != 2:
        raise _invalid(f'topk_ids of shape {tuple(topk_ids.shape)}: expected (M, k)')
    m, k = topk_ids.shape
    emap = None if expert_map is None else expert_map.to(torch.int32).contiguous()
    local = emap is not None and ignore_invalid_experts
    last = None if torch.compiler.is_compiling() else _last
    if last is not None and _same(last[0], topk_ids) and last[1] == topk_ids._version \
            and last[4]['num_experts'] == num_experts:
        _, _, logits, bias, fields, block, routing = last
        if block != block_size or local:
            flags = fields['flags'] | (FLAG_EXPERT_MAP if local else 0)
            r = router(block_m=block_size, max_tokens=m, **dict(fields, flags=flags),
                       **({'local_expert_count': num_experts} if local else {}))
            routing = route(logits, r, correction_bias=bias, expert_map=emap if local else None, extras=False)
    else:
        routing = _align_ids(topk_ids, block_size, num_experts, emap if local else None)
    sorted_ids, expert_ids, live = routing[2:5]
    if emap is not None and not local:
        # -1 (the blocks past the live length) stays -1.
        extended = torch.cat([emap, emap.new_full((1,), -1)])
        expert_ids = extended[expert_ids.long()]
    return sorted_ids, expert_ids, live


def _same(a, b):
    """The same elements (b may be a view of all of a, as an engine's chunk
    of one); the kept tensor holds its memory, so no other can be there."""
    return (a is b or (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
                       and a.dtype == b.dtype and a.device == b.device))


def _align_ids(topk_ids, block_size, num_experts, emap):
    """The plan of ids that were not routed here: logits ranking each row's
    ids in their order (the rest -inf) route to exactly those ids. An id
    outside [0, E) (-1 marks a padded token) in slot j goes to extra expert
    E + j, which no rank owns, so it is in no group, as the engines' kernels
    skip it (with E + k > MAX_EXPERTS there is no room: ids must then be valid)."""
    m, k = topk_ids.shape
    device = topk_ids.device
    width = num_experts + k if num_experts + k <= MAX_EXPERTS else num_experts
    ids = topk_ids.long()
    if width > num_experts:
        spare = cached(('spare', num_experts, k, device),
                       lambda: torch.arange(num_experts, num_experts + k, device=device))
        ids = torch.where((ids >= 0) & (ids < num_experts), ids, spare)
    ranks = cached(('ranks', k, device), lambda: torch.arange(k, 0, -1, dtype=torch.float32, device=device))
    logits = torch.full((m, width), float('-inf'), dtype=torch.float32, device=device)
    logits.scatter_(1, ids, ranks.expand(m, k))
    fields = dict(num_experts=width, top_k=k, block_m=block_size, max_tokens=m, flags=FLAG_TAIL_FILL)
    if width == num_experts and emap is None:
        return route(logits, router(**fields), extras=False)
    if emap is None:
        emap = cached(('identity', num_experts, device),
                      lambda: torch.arange(num_experts, dtype=torch.int32, device=device))
    if width > num_experts:
        emap = torch.cat([emap, emap.new_full((width - num_experts,), -1)])
    fields.update(flags=FLAG_TAIL_FILL | FLAG_EXPERT_MAP, local_expert_count=num_experts)
    return route(logits, router(**fields), expert_map=emap, extras=False)
