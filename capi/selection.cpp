// The launch plan as the diagnostics see it: alphamoe_router_select and
// alphamoe_router_candidates (capi/plan.cpp decides).
#include <string.h>

#include "params.h"
#include "plan.h"
#include "struct_io.h"

using namespace alphamoe;

extern "C" const char *alphamoe_specialization_name(alphamoe_specialization specialization_in) {
    // Any int may come from C: read it as one (see alphamoe_status_string).
    int specialization;
    memcpy(&specialization, &specialization_in, sizeof specialization);
    switch (specialization) {
    case ALPHAMOE_SPECIALIZATION_AUTO: return "auto";
    case ALPHAMOE_SPECIALIZATION_TINY: return "tiny";
    case ALPHAMOE_SPECIALIZATION_SMALL: return "small";
    case ALPHAMOE_SPECIALIZATION_LARGE: return "large";
    }
    return nullptr;
}

extern "C" alphamoe_status alphamoe_router_select(const alphamoe_router *router, int32_t num_tokens,
                                                  const alphamoe_device_attributes *device,
                                                  alphamoe_selection *out) {
    alphamoe_status s = check_router(router);
    if (s != ALPHAMOE_OK) return s;
    alphamoe_device_attributes attrs;
    s = read_struct(device, kDeviceAttributesVersions, &attrs);
    if (s != ALPHAMOE_OK) return s;
    s = check_output_struct(out, kSelectionVersions);
    if (s != ALPHAMOE_OK) return s;
    LaunchPlan plan;
    s = plan_call(*router, num_tokens, attrs, &plan);
    if (s != ALPHAMOE_OK) return s;
    write_struct(selection_of(plan), out);
    return ALPHAMOE_OK;
}

extern "C" alphamoe_status alphamoe_router_candidates(const alphamoe_router *router, int32_t num_tokens,
                                                      const alphamoe_device_attributes *device,
                                                      alphamoe_selection *plans, int32_t capacity, int32_t *count) {
    alphamoe_status s = check_router(router);
    if (s != ALPHAMOE_OK) return s;
    if (count == nullptr || (plans == nullptr && capacity > 0)) return ALPHAMOE_ERROR_NULL_POINTER;
    if (capacity < 0) return ALPHAMOE_ERROR_INVALID_ARGUMENT;
    alphamoe_device_attributes attrs;
    s = read_struct(device, kDeviceAttributesVersions, &attrs);
    if (s != ALPHAMOE_OK) return s;
    for (int32_t i = 0; i < capacity; ++i)
        if (plans[i].struct_size != sizeof(alphamoe_selection)) return ALPHAMOE_ERROR_STRUCT_SIZE;
    LaunchPlan chosen;
    s = plan_call(*router, num_tokens, attrs, &chosen);
    if (s != ALPHAMOE_OK) return s;
    LaunchPlan candidates[kEntryCount];
    const int32_t n = plan_candidates(chosen, *router, num_tokens, candidates, kEntryCount);
    for (int32_t i = 0; i < n && i < capacity; ++i) plans[i] = selection_of(candidates[i]);
    *count = n;
    return ALPHAMOE_OK;
}
