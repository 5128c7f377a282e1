// alphamoe_route: checks, picks the variant, launches one kernel.
#include "device_state.h"
#include "driver.h"
#include "flavour.h"
#include "images.h"
#include "route_args.h"
#include "router_internal.h"
#include "selection.h"

using namespace alphamoe;

namespace {

static_assert(kFlagTailFill == ALPHAMOE_FLAG_TAIL_FILL && kFlagNoRenormalize == ALPHAMOE_FLAG_NO_RENORMALIZE &&
                  kFlagCorrectionBias == ALPHAMOE_FLAG_CORRECTION_BIAS && kFlagExpertMap == ALPHAMOE_FLAG_EXPERT_MAP &&
                  (kFlagSigmoid & ALPHAMOE_FLAG_ALL) == 0,
              "kernel flags share the public flags' bits");
static_assert(kLogitsF32 == int{ALPHAMOE_LOGITS_F32} && kLogitsBf16 == int{ALPHAMOE_LOGITS_BF16} &&
                  kLogitsF16 == int{ALPHAMOE_LOGITS_F16},
              "kernel logits types are the public ones");
static_assert(kMaxTopK == ALPHAMOE_MAX_TOP_K, "the kernels hold up to the public top_k");

RouteArgs make_args(const alphamoe_router &router, int32_t num_tokens, const void *logits,
                    const alphamoe_buffers &b, const alphamoe_selection &sel) {
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
    a.tokens_per_cta = sel.tokens_per_cta;
    a.flags = p.flags & (kFlagTailFill | kFlagNoRenormalize | kFlagCorrectionBias | kFlagExpertMap);
    if (p.scoring == ALPHAMOE_SCORING_SIGMOID) a.flags |= kFlagSigmoid;
    a.logits_type = p.logits_type;
    a.correction_bias = (p.flags & ALPHAMOE_FLAG_CORRECTION_BIAS) ? b.correction_bias : nullptr;
    a.expert_map = (p.flags & ALPHAMOE_FLAG_EXPERT_MAP) ? b.expert_map : nullptr;
    a.scale = p.routed_scaling_factor;
    a.num_groups = p.num_groups;
    a.topk_groups = p.topk_groups;
    a.local_begin = p.local_expert_begin;
    a.plan_experts = p.local_expert_count;
    a.cta_groups = cta_grouping(sel.grid_ctas);
    return a;
}

CUresult launch(const Driver &d, const DeviceState &st, const alphamoe_router &router,
                const alphamoe_selection &sel, RouteArgs args, CUstream stream) {
    const int32_t candidates = shared_expert(router) ? router.params.num_experts - 1 : router.params.num_experts;
    // The plain softmax over 16-bit logits is a flavour only by the type:
    // it runs the plain kernels' entry points for them.
    const bool half_logits = router.params.logits_type != ALPHAMOE_LOGITS_F32;
    // The plain tiny kernel holds only the plan of at most a token a warp
    // (kernels/common/route_kernel.cuh): a plain call of more tokens on one
    // CTA (forced, or where a grid cannot be launched) runs the flavoured
    // tiny kernel, whose plan serves any call.
    const bool beyond_plain_tiny =
        sel.specialization == ALPHAMOE_SPECIALIZATION_TINY && args.num_tokens > kWarpsPerBlock;
    const bool flavoured = beyond_plain_tiny ||
                           (routes_a_flavour(router.params) && !plain_softmax_of_half_logits(router.params));
    const int index = kernel_index(sel.specialization, shared_expert(router), flavoured);
    const int width = row_width_index(candidates);
    // A one-token call of the flavoured tiny kernel goes to its one-token
    // entry point where there is one. Where its CTA ranking steps aside (an
    // expert map, say), that entry point ranks the token as the other does.
    // A call of 16-bit logits goes to its kernel's entry point for them
    // where there is one (kernels/common/flavour.cuh), and a plain large
    // call whose pairs pay for a list of their own to a staged one
    // (route_args.h). A flavoured small call of a token a CTA goes to the
    // token-CTA entry point where there is one (the calls of
    // token_ctas_hold, capi/selection.cpp); there too the CTA steps aside
    // where its ranking does not serve.
    const auto has = [&](EntryVariant v) { return st.entries[v][index][width].kernel != nullptr; };
    const bool half = half_logits && has(kEntryHalfLogits);
    const EntryVariant staged_variant = half ? kEntryStagedHalfLogits : kEntryStaged;
    const bool staged = !flavoured && has(staged_variant) &&
                        pairs_staged(args.tokens_per_cta, args.top_k, args.plan_experts);
    const bool token_ctas = args.tokens_per_cta == 1 && args.num_tokens >= 2 && has(kEntryTokenCtas);
    const EntryVariant variant = args.num_tokens == 1 && has(kEntryOneToken) ? kEntryOneToken
                                 : token_ctas                                ? kEntryTokenCtas
                                 : staged                                    ? staged_variant
                                 : half                                      ? kEntryHalfLogits
                                                                             : kEntryPlain;
    const EntryPoint &entry = st.entries[variant][index][width];
    // A token-CTA grid is one cluster up to kMaxTokenCtas CTAs, beyond the
    // portable size where the device holds such a cluster; where it does
    // not, the launch is refused as the driver refuses a cluster too large,
    // and one CTA routes the call (alphamoe_route).
    const bool token_cluster = variant == kEntryTokenCtas && sel.grid_ctas > kMaxClusterCtas;
    if (token_cluster && sel.grid_ctas > st.token_cluster_ctas) return CUDA_ERROR_INVALID_CLUSTER_SIZE;

    CUlaunchAttribute attrs[2] = {};
    unsigned n_attrs = 0;
    if (token_cluster || launches_as_cluster(sel)) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n_attrs].value.clusterDim.x = static_cast<unsigned>(sel.grid_ctas);
        attrs[n_attrs].value.clusterDim.y = 1;
        attrs[n_attrs].value.clusterDim.z = 1;
        ++n_attrs;
    } else if (sel.cooperative) {
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
    cfg.gridDimX = static_cast<unsigned>(sel.grid_ctas);
    cfg.gridDimY = 1;
    cfg.gridDimZ = 1;
    cfg.blockDimX = static_cast<unsigned>(sel.block_threads);
    cfg.blockDimY = 1;
    cfg.blockDimZ = 1;
    cfg.hStream = stream;
    cfg.attrs = n_attrs ? attrs : nullptr;
    cfg.numAttrs = n_attrs;
    void *params[] = {&args};
    cfg.sharedMemBytes = static_cast<unsigned>(entry.dynamic_smem);
    // A CUkernel launches as a CUfunction in the stream's context.
    return d.LaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(entry.kernel), params, nullptr);
}

}  // namespace

extern "C" alphamoe_status alphamoe_route(const alphamoe_router *router, int32_t num_tokens,
                                          const void *logits, const alphamoe_buffers *buffers,
                                          struct CUstream_st *stream) {
    alphamoe_buffers b;
    alphamoe_status s = validate_call(router, num_tokens, logits, buffers, true, &b);
    if (s != ALPHAMOE_OK) return s;
    if (!device_supports_flavour(router->params)) return ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR;
    const Driver *d = nullptr;
    s = load_driver(&d);
    if (s != ALPHAMOE_OK) return s;
    const DeviceState *st = nullptr;
    s = device_state_for_stream(*d, stream, &st);
    if (s != ALPHAMOE_OK) return s;
    alphamoe_selection sel;
    s = select_variant(*router, num_tokens, st->attributes, &sel);
    if (s != ALPHAMOE_OK) return s;

    const RouteArgs args = make_args(*router, num_tokens, logits, b, sel);
    CUresult r = launch(*d, *st, *router, sel, args, stream);
    if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE || r == CUDA_ERROR_INVALID_CLUSTER_SIZE) {
        // Fewer multiprocessors than the attributes promised (a partitioned
        // or shared device), too few for the grid or its cluster: one CTA
        // computes the same plan.
        alphamoe_selection tiny = sel;
        tiny.specialization = ALPHAMOE_SPECIALIZATION_TINY;
        tiny.cooperative = 0;
        tiny.grid_ctas = 1;
        tiny.tokens_per_cta = num_tokens > 0 ? num_tokens : 1;
        r = launch(*d, *st, *router, tiny, make_args(*router, num_tokens, logits, b, tiny), stream);
    }
    return status_from_cuda(r);
}
