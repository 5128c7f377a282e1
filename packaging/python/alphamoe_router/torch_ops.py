"""The router as a PyTorch operator, alphamoe::route (needs torch 2.4 or newer).

    import alphamoe_router.torch_ops as ops
    r = ops.route(logits, router)       # a Routing of tensors, as route() gives

torch.ops.alphamoe.route(logits, correction_bias, expert_map, params) takes
the router as a string, Router._op_params (every parameter, the scaling
factor as its float32 bits: a constant that torch.compile never makes
symbolic), and returns all eight outputs. Its fake
implementation gives every output's shape from the router's sizes (the
capacity depends on max_tokens only, never on the logits' values), so
torch.compile(fullgraph=True) traces through it, and CUDA graphs capture
its one kernel launch. alphamoe_router.route() calls it by itself inside
torch.compile. CPU tensors run the CPU reference.
"""
import struct
from typing import Optional, Tuple

import torch

from . import Router, _PARAM_FIELDS, _abi, _arrays, _routers_by_params

_FLOAT_FIELDS = {name for name, ctype in _abi.Params._fields_ if ctype is _abi.ctypes.c_float}
_routers = {}


def router_of(params):
    """The Router of a parameter string (Router._op_params): one the caller
    made, else one made here once."""
    router = _routers_by_params.get(params) or _routers.get(params)
    if router is None:
        values = [int(v) for v in params.split(',')]
        fields = {name: struct.unpack('<f', struct.pack('<I', value))[0] if name in _FLOAT_FIELDS else value
                  for name, value in zip(_PARAM_FIELDS, values)}
        router = _routers[params] = Router(**fields)
    return router


Tensors = Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                torch.Tensor]


@torch.library.custom_op('alphamoe::route', mutates_args=())
def _route_op(logits: torch.Tensor, correction_bias: Optional[torch.Tensor], expert_map: Optional[torch.Tensor],
              params: str) -> Tensors:
    router = router_of(params)
    if logits.is_cuda:
        stride = router.params['logits_row_stride']
        if logits.dim() == 2 and logits.shape[0] > 1 and (logits.stride(1) != 1 or logits.stride(0) != stride):
            # A compiled graph may lay its buffers out as it likes.
            logits = logits.contiguous() if stride == logits.shape[1] else logits
        result = _arrays._route_torch(logits, router, correction_bias, expert_map, True, separate=True)
    else:
        result = _arrays._route_host_arrays(logits, router, correction_bias, expert_map, True, _arrays._TorchOut)
    return tuple(result)


@_route_op.register_fake
def _route_fake(logits, correction_bias, expert_map, params):
    router = router_of(params)
    z, k = router.sizes, router.params['top_k']
    m = logits.shape[0]
    i32 = dict(dtype=torch.int32)
    return (logits.new_empty((m, k), **i32), logits.new_empty((m, k), dtype=torch.float32),
            logits.new_empty((z['sorted_token_ids'],), **i32), logits.new_empty((z['expert_ids'],), **i32),
            logits.new_empty((1,), **i32), logits.new_empty((z['expert_counts'],), **i32),
            logits.new_empty((z['expert_offsets'],), **i32), logits.new_empty((m, k), **i32))


def route(logits, router, correction_bias=None, expert_map=None, extras=True):
    """route() through the op: a Routing of tensors (the extras None with
    extras=False, though the op computes them)."""
    out = torch.ops.alphamoe.route(logits, correction_bias, expert_map, router._op_params)
    if extras:
        return _arrays.Routing(*out)
    return _arrays.Routing(*out[:5], None, None, None)


_arrays._torch_setup()  # route() may not have seen a tensor yet
