// Runs a call on the GPU: the call's context and its view of the device,
// the launch plan, the kernel's argument block and one launch.
#ifndef ALPHAMOE_CAPI_LAUNCH_H
#define ALPHAMOE_CAPI_LAUNCH_H

#include "driver.h"
#include "params.h"

namespace alphamoe {

// Routes a call whose arguments are validated (validate_call) on the
// stream's context: plan_call's plan, or, where wanted is not NULL, the
// candidate plan (plan_candidates) it names, ALPHAMOE_ERROR_INVALID_ARGUMENT
// where none does.
alphamoe_status route_on_device(const alphamoe_router &router, int32_t num_tokens, const void *logits,
                                const alphamoe_buffers &buffers, const alphamoe_selection *wanted, CUstream stream);

}  // namespace alphamoe

#endif
