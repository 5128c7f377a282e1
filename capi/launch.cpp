#include "launch.h"

#include "device.h"
#include "plan.h"
#include "route_args.h"

namespace alphamoe {
namespace {

static_assert(kFlagTailFill == ALPHAMOE_FLAG_TAIL_FILL && kFlagNoRenormalize == ALPHAMOE_FLAG_NO_RENORMALIZE &&
                  kFlagCorrectionBias == ALPHAMOE_FLAG_CORRECTION_BIAS && kFlagExpertMap == ALPHAMOE_FLAG_EXPERT_MAP &&
                  kFlagHashRouting == ALPHAMOE_FLAG_HASH_ROUTING &&
                  kFlagRedundantExperts == ALPHAMOE_FLAG_REDUNDANT_EXPERTS &&
                  (kFlagSigmoid & ALPHAMOE_FLAG_ALL) == 0,
              "kernel flags share the public flags' bits");
static_assert(kLogitsF32 == int{ALPHAMOE_LOGITS_F32} && kLogitsBf16 == int{ALPHAMOE_LOGITS_BF16} &&
                  kLogitsF16 == int{ALPHAMOE_LOGITS_F16},
              "kernel logits types are the public ones");
static_assert(kWideMaxTopK == ALPHAMOE_MAX_TOP_K && kWideMaxExperts == ALPHAMOE_MAX_EXPERTS,
              "the wide kernels hold the public limits");

RouteArgs make_args(const alphamoe_router &router, const LaunchPlan &plan, int32_t num_tokens, const void *logits,
                    const alphamoe_buffers &b) {
    const alphamoe_params &p = router.params;
    RouteArgs a = {};
    a.logits = logits;
    a.row_stride = p.logits_row_stride;
    a.topk_ids = b.topk_ids;
    a.topk_weights = b.topk_weights;
    a.sorted_token_ids = b.sorted_token_ids;
    a.expert_ids = b.expert_ids;
    a.num_tokens_post_padded = b.num_tokens_post_padded;
    a.expert_counts = b.expert_counts;
    a.expert_offsets = b.expert_offsets;
    a.pair_to_sorted = b.pair_to_sorted;
    a.workspace = static_cast<uint32_t *>(b.workspace);
    a.num_tokens = num_tokens;
    a.num_experts = p.num_experts;
    a.top_k = p.top_k;
    a.block_m = p.block_m;
    a.block_m_divisor = alphamoe_divisor_of(static_cast<uint32_t>(p.block_m));
    a.capacity = static_cast<int32_t>(router.capacity);
    a.tokens_per_cta = plan.tokens_per_cta;
    a.flags = p.flags & (kFlagTailFill | kFlagNoRenormalize | kFlagCorrectionBias | kFlagExpertMap | kFlagHashRouting |
                         kFlagRedundantExperts);
    if (p.scoring == ALPHAMOE_SCORING_SIGMOID) a.flags |= kFlagSigmoid;
    if (p.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS) a.flags |= kFlagSqrtSoftplus;
    a.flags |= plan.plan_bits;
    a.logits_type = p.logits_type;
    a.correction_bias = (p.flags & ALPHAMOE_FLAG_CORRECTION_BIAS) ? b.correction_bias : nullptr;
    a.expert_map = (p.flags & ALPHAMOE_FLAG_EXPERT_MAP) ? b.expert_map : nullptr;
    a.scale = p.routed_scaling_factor;
    a.num_groups = p.num_groups;
    a.topk_groups = p.topk_groups;
    a.local_begin = p.local_expert_begin;
    a.plan_experts = p.local_expert_count;
    a.cta_groups = cta_grouping(plan.grid_ctas);
    if (p.flags & ALPHAMOE_FLAG_HASH_ROUTING) {
        a.token_ids = b.token_ids;
        a.hash_table = b.hash_table;
        a.vocab_size = p.vocab_size;
    }
    if (p.flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) {
        a.replica_slots = p.replica_slots;
        a.logical_to_physical = b.logical_to_physical;
        a.replica_count = b.replica_count;
        a.physical_load = b.physical_load;
        a.physical_experts = p.num_physical_experts;
    }
    return a;
}

// Launches plan's entry point for a call whose arguments are validated.
alphamoe_status launch(const Driver &d, const DeviceState &device, const alphamoe_router &router,
                       const LaunchPlan &plan, int32_t num_tokens, const void *logits, const alphamoe_buffers &buffers,
                       CUstream stream) {
    RouteArgs args = make_args(router, plan, num_tokens, logits, buffers);
    const EntryPoint &entry = device.entries[plan.entry];
    CUlaunchAttribute attrs[2] = {};
    unsigned n_attrs = 0;
    if (plan.cluster_ctas > 0) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n_attrs].value.clusterDim.x = static_cast<unsigned>(plan.cluster_ctas);
        attrs[n_attrs].value.clusterDim.y = 1;
        attrs[n_attrs].value.clusterDim.z = 1;
        ++n_attrs;
    } else if (plan.cooperative) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n_attrs].value.cooperative = 1;
        ++n_attrs;
    }
    if (router.params.flags & ALPHAMOE_FLAG_PDL) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n_attrs].value.programmaticStreamSerializationAllowed = 1;
        ++n_attrs;
    }
    CUlaunchConfig cfg = {};
    cfg.gridDimX = static_cast<unsigned>(plan.grid_ctas);
    cfg.gridDimY = 1;
    cfg.gridDimZ = 1;
    cfg.blockDimX = kBlockThreads;
    cfg.blockDimY = 1;
    cfg.blockDimZ = 1;
    cfg.sharedMemBytes = static_cast<unsigned>(entry.dynamic_smem);
    cfg.hStream = stream;
    cfg.attrs = n_attrs ? attrs : nullptr;
    cfg.numAttrs = n_attrs;
    void *params[] = {&args};
    // A CUkernel launches as a CUfunction in the stream's context.
    return status_from_cuda(d.LaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(entry.kernel), params, nullptr));
}

}  // namespace

alphamoe_status route_on_device(const alphamoe_router &router, int32_t num_tokens, const void *logits,
                                const alphamoe_buffers &b, const alphamoe_selection *wanted, CUstream stream) {
    if (!device_supports_flavour(router.params)) return ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR;
    const Driver *d = nullptr;
    alphamoe_status s = load_driver(&d);
    if (s != ALPHAMOE_OK) return s;
    const DeviceState *device = nullptr;
    alphamoe_device_attributes attributes;
    s = context_state_for_stream(*d, stream, &device, &attributes);
    if (s != ALPHAMOE_OK) return s;
    LaunchPlan chosen;
    s = plan_call(router, num_tokens, attributes, &chosen);
    if (s != ALPHAMOE_OK) return s;
    if (wanted == nullptr) return launch(*d, *device, router, chosen, num_tokens, logits, b, stream);
    // Only a plan the library would run for this call on this context.
    LaunchPlan candidates[kEntryCount];
    const int32_t n = plan_candidates(chosen, router, num_tokens, candidates, kEntryCount);
    for (int32_t i = 0; i < n && i < kEntryCount; ++i) {
        if (same_plan(selection_of(candidates[i]), *wanted))
            return launch(*d, *device, router, candidates[i], num_tokens, logits, b, stream);
    }
    return ALPHAMOE_ERROR_INVALID_ARGUMENT;
}

}  // namespace alphamoe
