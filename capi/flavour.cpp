#include "flavour.h"

namespace alphamoe {

// The kernels implement the renormalized fp32 softmax top-k over all
// experts, routed-only or with a shared expert. Each condition below goes
// away when the kernels implement that flavour (and its GPU tests in
// test/test_gpu_flavours.c then run for real).
bool device_supports_flavour(const alphamoe_params &p) {
    const uint32_t kernel_lacks = ALPHAMOE_FLAG_NO_RENORMALIZE | ALPHAMOE_FLAG_CORRECTION_BIAS |
                                  ALPHAMOE_FLAG_EXPERT_MAP;
    if (p.flags & kernel_lacks) return false;
    if (p.scoring != ALPHAMOE_SCORING_SOFTMAX) return false;
    if (p.logits_type != ALPHAMOE_LOGITS_F32) return false;
    if (p.num_groups != 1) return false;
    if (p.routed_scaling_factor != 1.0f) return false;
    if (p.local_expert_begin != 0 || p.local_expert_count != p.num_experts) return false;
    return true;
}

}  // namespace alphamoe
