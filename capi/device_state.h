// What the launcher needs to know about a device, resolved once per device:
// its attributes as the selection reads them, checked kernel images, and
// the cooperative occupancy of the router kernels.
#ifndef ALPHAMOE_CAPI_DEVICE_STATE_H
#define ALPHAMOE_CAPI_DEVICE_STATE_H

#include "alphamoe/router.h"
#include "driver.h"
#include "route_args.h"

namespace alphamoe {

struct DeviceState {
    CUdevice device;
    alphamoe_device_attributes attributes;
    // Context-independent handles, per kernel and row width (route_args.h).
    CUkernel kernels[ALPHAMOE_KERNEL_COUNT][kRowWidths];
    // The flavoured tiny kernel's one-token entry points, from
    // kOneTokenEntryMinSlots on (route_args.h); null everywhere else.
    CUkernel one_token_kernels[ALPHAMOE_KERNEL_COUNT][kRowWidths];
    // Other entry points, null where a kernel has none: the plain large
    // kernel's staged ones (pairs_staged in route_args.h), and those for
    // 16-bit logits of every plain kernel and of the flavoured large one
    // (kernels/common/flavour.cuh).
    CUkernel staged_kernels[ALPHAMOE_KERNEL_COUNT][kRowWidths];
    CUkernel half_logits_kernels[ALPHAMOE_KERNEL_COUNT][kRowWidths];
    // Dynamic shared memory each launch reserves (none is used): the large
    // kernels' reservation keeps a second CTA off an SM (one_cta_per_sm).
    int32_t dynamic_smem[ALPHAMOE_KERNEL_COUNT][kRowWidths];
    int32_t staged_dynamic_smem[ALPHAMOE_KERNEL_COUNT][kRowWidths];
    int32_t half_logits_dynamic_smem[ALPHAMOE_KERNEL_COUNT][kRowWidths];
};

// The state of the device that owns `stream`'s context (the current context
// for the NULL stream). Safe under concurrent first calls.
alphamoe_status device_state_for_stream(const Driver &driver, CUstream stream,
                                        const DeviceState **out);

// The state of device `ordinal`, resolved in its primary context when it is
// not resolved yet.
alphamoe_status device_state_for_ordinal(const Driver &driver, int ordinal, const DeviceState **out);

}  // namespace alphamoe

#endif
