// Carries out a launch plan: the kernel's argument block and one launch.
#ifndef ALPHAMOE_CAPI_LAUNCH_H
#define ALPHAMOE_CAPI_LAUNCH_H

#include "device.h"
#include "driver.h"
#include "plan.h"

namespace alphamoe {

// Launches plan's entry point for a call whose arguments are validated.
alphamoe_status launch(const Driver &driver, const DeviceState &device, const alphamoe_router &router,
                       const LaunchPlan &plan, int32_t num_tokens, const void *logits,
                       const alphamoe_buffers &buffers, CUstream stream);

}  // namespace alphamoe

#endif
