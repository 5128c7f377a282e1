// The C API: every entry point of the library, in the order
// include/alphamoe/router.h and then router_diagnostics.h declare them.
// Each checks its arguments, calls the function that does the work and
// writes the results: a call that fails a check writes nothing.
#include <string.h>

#include "alphamoe/router_diagnostics.h"
#include "device.h"
#include "driver.h"
#include "images.h"
#include "kernel_table.h"
#include "launch.h"
#include "params.h"
#include "plan.h"
#include "reference/reference.h"
#include "status.h"
#include "struct_io.h"

using namespace alphamoe;

namespace {

// A C caller may pass any int. In C++ an enum holding a value outside
// its enumerators' range is undefined, so its bits are read as an int
// through its address: a copy would load it as the enum.
template <typename Enum>
int bits_of(const Enum &value) {
    int bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

}  // namespace

extern "C" {

// include/alphamoe/router.h

const char *alphamoe_status_string(alphamoe_status status) { return status_message(bits_of(status)); }

uint32_t alphamoe_version_number(void) { return ALPHAMOE_VERSION_NUMBER; }

const char *alphamoe_version_string(void) { return ALPHAMOE_VERSION_STRING; }

alphamoe_status alphamoe_router_create(const alphamoe_params *params, alphamoe_router **out) {
    if (out == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    alphamoe_params p;
    alphamoe_status s = read_struct(params, kParamsVersions, &p);
    if (s != ALPHAMOE_OK) return s;
    s = validate_params(&p);
    if (s != ALPHAMOE_OK) return s;
    return create_router(p, out);
}

void alphamoe_router_destroy(alphamoe_router *router) {
    if (check_router(router) != ALPHAMOE_OK) return;
    destroy_router(router);
}

alphamoe_status alphamoe_router_get_params(const alphamoe_router *router, alphamoe_params *out) {
    alphamoe_status s = check_router(router);
    if (s != ALPHAMOE_OK) return s;
    s = check_output_struct(out, kParamsVersions);
    if (s != ALPHAMOE_OK) return s;
    write_struct(router->params, out);
    return ALPHAMOE_OK;
}

alphamoe_status alphamoe_router_sizes(const alphamoe_router *router, alphamoe_sizes *out) {
    alphamoe_status s = check_router(router);
    if (s != ALPHAMOE_OK) return s;
    s = check_output_struct(out, kSizesSizeV1);
    if (s != ALPHAMOE_OK) return s;
    write_struct(router_sizes(*router), out);
    return ALPHAMOE_OK;
}

alphamoe_status alphamoe_route(const alphamoe_router *router, int32_t num_tokens, const void *logits,
                               const alphamoe_buffers *buffers, struct CUstream_st *stream) {
    alphamoe_buffers b;
    const alphamoe_status s = validate_call(router, num_tokens, logits, buffers, true, &b);
    if (s != ALPHAMOE_OK) return s;
    return route_on_device(*router, num_tokens, logits, b, nullptr, stream);
}

alphamoe_status alphamoe_route_host(const alphamoe_router *router, int32_t num_tokens, const void *logits,
                                    const alphamoe_buffers *buffers) {
    alphamoe_buffers b;
    const alphamoe_status s = validate_call(router, num_tokens, logits, buffers, false, &b);
    if (s != ALPHAMOE_OK) return s;
    route_on_host(*router, num_tokens, logits, b);
    return ALPHAMOE_OK;
}

alphamoe_status alphamoe_device_count(int32_t *count) {
    if (count == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    const Driver *d = nullptr;
    const alphamoe_status s = load_driver(&d);
    if (s != ALPHAMOE_OK) return s;
    *count = d->device_count;
    return ALPHAMOE_OK;
}

alphamoe_status alphamoe_device_describe(int32_t device_ordinal, char *name, size_t name_capacity,
                                         int32_t *compute_capability, int32_t *image_arch) {
    if ((name == nullptr && name_capacity > 0) || compute_capability == nullptr || image_arch == nullptr)
        return ALPHAMOE_ERROR_NULL_POINTER;
    const Driver *d = nullptr;
    alphamoe_status s = load_driver(&d);
    if (s != ALPHAMOE_OK) return s;
    if (device_ordinal < 0 || device_ordinal >= d->device_count) return ALPHAMOE_ERROR_NO_DEVICE;
    char buffer[256] = {0};
    int32_t cc = 0;
    s = describe_device(*d, device_ordinal, buffer, sizeof buffer, &cc);
    if (s != ALPHAMOE_OK) return s;
    if (name_capacity > 0) {
        strncpy(name, buffer, name_capacity - 1);
        name[name_capacity - 1] = '\0';
    }
    *compute_capability = cc;
    *image_arch = image_arch_for(cc);
    return ALPHAMOE_OK;
}

// include/alphamoe/router_diagnostics.h

alphamoe_status alphamoe_device_attributes_query(int32_t device_ordinal, alphamoe_device_attributes *out) {
    alphamoe_status s = check_output_struct(out, kDeviceAttributesVersions);
    if (s != ALPHAMOE_OK) return s;
    const Driver *d = nullptr;
    s = load_driver(&d);
    if (s != ALPHAMOE_OK) return s;
    const DeviceState *st = nullptr;
    s = device_state_for_ordinal(*d, device_ordinal, &st);
    if (s != ALPHAMOE_OK) return s;
    write_struct(st->attributes, out);
    return ALPHAMOE_OK;
}

const char *alphamoe_specialization_name(alphamoe_specialization specialization) {
    return specialization_name_of(bits_of(specialization));
}

alphamoe_status alphamoe_router_select(const alphamoe_router *router, int32_t num_tokens,
                                       const alphamoe_device_attributes *device, alphamoe_selection *out) {
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

alphamoe_status alphamoe_router_candidates(const alphamoe_router *router, int32_t num_tokens,
                                           const alphamoe_device_attributes *device, alphamoe_selection *plans,
                                           int32_t capacity, int32_t *count) {
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

alphamoe_status alphamoe_route_with_plan(const alphamoe_router *router, int32_t num_tokens, const void *logits,
                                         const alphamoe_buffers *buffers, const alphamoe_selection *plan,
                                         struct CUstream_st *stream) {
    // A plan names its entry point: only a selection of this version does.
    if (plan == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    if (plan->struct_size < sizeof(alphamoe_selection)) return ALPHAMOE_ERROR_STRUCT_SIZE;
    alphamoe_selection wanted;
    alphamoe_status s = read_struct(plan, kSelectionVersions, &wanted);
    if (s != ALPHAMOE_OK) return s;
    alphamoe_buffers b;
    s = validate_call(router, num_tokens, logits, buffers, true, &b);
    if (s != ALPHAMOE_OK) return s;
    return route_on_device(*router, num_tokens, logits, b, &wanted, stream);
}

int32_t alphamoe_kernel_count(void) { return kKernelCount; }

int32_t alphamoe_entry_point_count(void) { return kEntryCount; }

const char *alphamoe_kernel_name(int32_t index) {
    if (index < 0 || index >= kKernelCount) return nullptr;
    return kernel_info(index).name;
}

const char *alphamoe_entry_point_name(int32_t index) {
    if (index < 0 || index >= kEntryCount) return nullptr;
    return entry_info(index).name;
}

alphamoe_status alphamoe_kernel_images(int32_t index, int32_t *archs, int32_t capacity, int32_t *count) {
    if (count == nullptr || (archs == nullptr && capacity > 0)) return ALPHAMOE_ERROR_NULL_POINTER;
    if (reinterpret_cast<uintptr_t>(archs) % alignof(int32_t) != 0) return ALPHAMOE_ERROR_ALIGNMENT;
    if (index < 0 || index >= kKernelCount || capacity < 0) return ALPHAMOE_ERROR_INVALID_ARGUMENT;
    const KernelInfo &k = kernel_info(index);
    const int n = fatbin_elf_archs(k.fatbin, k.fatbin_size, archs, capacity);
    if (n < 0) return ALPHAMOE_ERROR_NO_IMAGE;
    *count = n;
    return ALPHAMOE_OK;
}

}  // extern "C"
