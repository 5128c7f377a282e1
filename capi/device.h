// What the launcher needs to know about a device and a context, resolved
// once each: the device's entry points loaded and prepared, its attributes
// and occupancy, and each context's view of it (its multiprocessors and the
// largest cluster it holds), which the launch plan reads.
#ifndef ALPHAMOE_CAPI_DEVICE_H
#define ALPHAMOE_CAPI_DEVICE_H

#include "alphamoe/router_diagnostics.h"
#include "driver.h"
#include "kernel_table.h"

namespace alphamoe {

struct EntryPoint {
    CUkernel kernel;
    // Dynamic shared memory each launch reserves (none is used): the large
    // kernels' reservation keeps a second CTA off an SM (one_cta_per_sm).
    int32_t dynamic_smem;
};

struct DeviceState {
    CUdevice device;
    // As the device's primary context sees it (alphamoe_device_attributes_query).
    alphamoe_device_attributes attributes;
    // Context-independent handles, one per entry point (kernel_table.h).
    EntryPoint entries[kEntryCount];
};

// The device and the attributes a call's plan reads, for the context that
// owns `stream` (the current context for the NULL stream). Safe under
// concurrent first calls.
alphamoe_status context_state_for_stream(const Driver &driver, CUstream stream, const DeviceState **device,
                                         alphamoe_device_attributes *context_attributes);

// The state of device `ordinal`, resolved in its primary context when it is
// not resolved yet.
alphamoe_status device_state_for_ordinal(const Driver &driver, int ordinal, const DeviceState **out);

// The name (in name[0..name_size - 1), which must be zeroed) and compute
// capability of device `ordinal`, in [0, device_count), as the driver
// tells them: nothing is resolved.
alphamoe_status describe_device(const Driver &driver, int ordinal, char *name, size_t name_size,
                                int32_t *compute_capability);

}  // namespace alphamoe

#endif
