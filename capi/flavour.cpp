#include "flavour.h"

#include "route_args.h"

namespace alphamoe {

// The kernels implement every flavour; grouped selection up to
// kMaxGpuGroups groups (more groups route on the CPU reference only).
bool device_supports_flavour(const alphamoe_params &p) {
    // The grouped selection keeps one group score per lane of a warp.
    return p.num_groups <= kMaxGpuGroups;
}

bool routes_a_flavour(const alphamoe_params &p) {
    const uint32_t flavour_flags =
        ALPHAMOE_FLAG_NO_RENORMALIZE | ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_EXPERT_MAP;
    return (p.flags & flavour_flags) != 0 || p.scoring != ALPHAMOE_SCORING_SOFTMAX ||
           p.logits_type != ALPHAMOE_LOGITS_F32 || p.num_groups > 1 || p.routed_scaling_factor != 1.0f ||
           p.local_expert_count != p.num_experts || p.local_expert_begin != 0;
}

bool plain_softmax_of_half_logits(const alphamoe_params &p) {
    alphamoe_params as_f32 = p;
    as_f32.logits_type = ALPHAMOE_LOGITS_F32;
    return p.logits_type != ALPHAMOE_LOGITS_F32 && !routes_a_flavour(as_f32);
}

}  // namespace alphamoe
