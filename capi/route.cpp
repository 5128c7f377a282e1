// alphamoe_route and alphamoe_route_with_plan: checks, the plan, one launch.
#include "device.h"
#include "driver.h"
#include "launch.h"
#include "params.h"
#include "plan.h"
#include "struct_io.h"

using namespace alphamoe;

namespace {

// The call's device and its context's view of it, once the call is valid.
alphamoe_status prepare(const alphamoe_router *router, int32_t num_tokens, const void *logits,
                        const alphamoe_buffers *buffers, CUstream stream, alphamoe_buffers *b, const Driver **d,
                        const DeviceState **device, alphamoe_device_attributes *attributes) {
    alphamoe_status s = validate_call(router, num_tokens, logits, buffers, true, b);
    if (s != ALPHAMOE_OK) return s;
    if (!device_supports_flavour(router->params)) return ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR;
    s = load_driver(d);
    if (s != ALPHAMOE_OK) return s;
    return context_state_for_stream(**d, stream, device, attributes);
}

}  // namespace

extern "C" alphamoe_status alphamoe_route(const alphamoe_router *router, int32_t num_tokens, const void *logits,
                                          const alphamoe_buffers *buffers, struct CUstream_st *stream) {
    alphamoe_buffers b;
    const Driver *d = nullptr;
    const DeviceState *device = nullptr;
    alphamoe_device_attributes attributes;
    alphamoe_status s = prepare(router, num_tokens, logits, buffers, stream, &b, &d, &device, &attributes);
    if (s != ALPHAMOE_OK) return s;
    LaunchPlan plan;
    s = plan_call(*router, num_tokens, attributes, &plan);
    if (s != ALPHAMOE_OK) return s;
    return launch(*d, *device, *router, plan, num_tokens, logits, b, stream);
}

extern "C" alphamoe_status alphamoe_route_with_plan(const alphamoe_router *router, int32_t num_tokens,
                                                    const void *logits, const alphamoe_buffers *buffers,
                                                    const alphamoe_selection *plan_in, struct CUstream_st *stream) {
    // A plan names its entry point: only a selection of this version does.
    if (plan_in == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    if (plan_in->struct_size < sizeof(alphamoe_selection)) return ALPHAMOE_ERROR_STRUCT_SIZE;
    alphamoe_selection wanted;
    alphamoe_status s = read_struct(plan_in, kSelectionVersions, &wanted);
    if (s != ALPHAMOE_OK) return s;
    alphamoe_buffers b;
    const Driver *d = nullptr;
    const DeviceState *device = nullptr;
    alphamoe_device_attributes attributes;
    s = prepare(router, num_tokens, logits, buffers, stream, &b, &d, &device, &attributes);
    if (s != ALPHAMOE_OK) return s;
    LaunchPlan chosen;
    s = plan_call(*router, num_tokens, attributes, &chosen);
    if (s != ALPHAMOE_OK) return s;
    // Only a plan the library would run for this call on this context.
    LaunchPlan candidates[kEntryCount];
    const int32_t n = plan_candidates(chosen, *router, num_tokens, candidates, kEntryCount);
    for (int32_t i = 0; i < n && i < kEntryCount; ++i) {
        if (same_plan(selection_of(candidates[i]), wanted))
            return launch(*d, *device, *router, candidates[i], num_tokens, logits, b, stream);
    }
    return ALPHAMOE_ERROR_INVALID_ARGUMENT;
}
