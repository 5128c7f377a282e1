// The CPU reference (alphamoe_route_host): the routing contract executed on
// the CPU, every flavour included.
#ifndef ALPHAMOE_CAPI_REFERENCE_REFERENCE_H
#define ALPHAMOE_CAPI_REFERENCE_REFERENCE_H

#include <stdint.h>

#include "params.h"

namespace alphamoe {

// Routes a call whose arguments are validated (validate_call) into b.
void route_on_host(const alphamoe_router &router, int32_t num_tokens, const void *logits, const alphamoe_buffers &b);

}  // namespace alphamoe

#endif
