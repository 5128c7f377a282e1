// The one place that decides which kernel runs a call, on what grid.
#ifndef ALPHAMOE_CAPI_SELECTION_H
#define ALPHAMOE_CAPI_SELECTION_H

#include "alphamoe/router_diagnostics.h"

namespace alphamoe {

// Pure: the router's parameters, M and the device attributes decide.
alphamoe_status select_variant(const alphamoe_router &router, int32_t num_tokens,
                               const alphamoe_device_attributes &device, alphamoe_selection *out);

// small's grid of at most kMaxClusterCtas CTAs, each of at most
// kMaxClusterCtaTokens tokens, launches as one thread-block cluster (the
// kernel exchanges counts through distributed shared memory), and so does
// a token-CTA grid of up to kMaxTokenCtas (capi/route.cpp); every other
// co-resident grid launches cooperatively.
bool launches_as_cluster(const alphamoe_selection &selection);

}  // namespace alphamoe

#endif
