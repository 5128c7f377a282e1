// What the launcher needs to know about a device, resolved once per device:
// its attributes as the selection reads them, checked kernel images, and
// the cooperative occupancy of the router kernels.
#ifndef ALPHAMOE_CAPI_DEVICE_STATE_H
#define ALPHAMOE_CAPI_DEVICE_STATE_H

#include "alphamoe/router_diagnostics.h"
#include "driver.h"
#include "route_args.h"

namespace alphamoe {

// The entry points of a kernel (kernels/common/kernel_name.cuh): one per
// row width, <entry point>_w<slots>, and variants of their own for some
// calls, <entry point><variant>_w<slots>.
enum EntryVariant {
    kEntryPlain,
    kEntryOneToken,          // the flavoured tiny kernel's, from kOneTokenEntryMinSlots (route_args.h)
    kEntryStaged,            // the plain large kernel's (pairs_staged in route_args.h)
    kEntryHalfLogits,        // 16-bit logits: every plain kernel's and the flavoured large one's
    kEntryStagedHalfLogits,  // the plain large kernel's staged ones for 16-bit logits
    kEntryTokenCtas,         // the routed flavoured small kernel's, a token a CTA, from kOneTokenEntryMinSlots
    kEntryVariants
};

struct EntryPoint {
    CUkernel kernel;  // null where the kernel has no such entry point
    // Dynamic shared memory each launch reserves (none is used): the large
    // kernels' reservation keeps a second CTA off an SM (one_cta_per_sm).
    int32_t dynamic_smem;
};

struct DeviceState {
    CUdevice device;
    alphamoe_device_attributes attributes;
    // The most CTAs a token-CTA grid launches with as one cluster:
    // kMaxTokenCtas where the device holds such a cluster, else
    // kMaxClusterCtas, the portable size.
    int32_t token_cluster_ctas;
    // Context-independent handles, per variant, kernel and row width
    // (route_args.h).
    EntryPoint entries[kEntryVariants][ALPHAMOE_KERNEL_COUNT][kRowWidths];
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
