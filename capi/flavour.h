// Which routing flavours the GPU kernels implement. The host reference runs
// every valid parameter set; a kernel that does not implement one must not
// run it with other semantics, so alphamoe_route and alphamoe_router_select
// ask here first and answer ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR.
#ifndef ALPHAMOE_CAPI_FLAVOUR_H
#define ALPHAMOE_CAPI_FLAVOUR_H

#include "alphamoe/router_diagnostics.h"

namespace alphamoe {

// params: validated and normalized (as the router holds them).
bool device_supports_flavour(const alphamoe_params &params);

// Anything but the first version's renormalized fp32 softmax over all
// experts: such calls run the _flavours kernels, so the first version's
// kernels carry none of the flavours' steps; but for
// plain_softmax_of_half_logits below.
bool routes_a_flavour(const alphamoe_params &params);

// The first version's renormalized softmax over bf16 or fp16 logits: a
// flavour by the element type alone, which the plain kernels also take, in
// entry points of their own (kernels/common/flavour.cuh).
bool plain_softmax_of_half_logits(const alphamoe_params &params);

}  // namespace alphamoe

#endif
