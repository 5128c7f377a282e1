#include "flavour.h"

#include "route_args.h"

namespace alphamoe {

// The kernels implement every flavour; grouped selection up to
// kMaxGpuGroups groups (more groups route on the CPU reference only).
bool device_supports_flavour(const alphamoe_params &p) {
    // The grouped selection keeps one group score per lane of a warp.
    return p.num_groups <= kMaxGpuGroups;
}

}  // namespace alphamoe
