#include "selection.h"

#include <string.h>

#include "flavour.h"
#include "images.h"
#include "route_args.h"
#include "router_internal.h"
#include "struct_io.h"

namespace alphamoe {
namespace {

// Where each specialization takes over, per image architecture. tiny keeps
// the whole call in one CTA (no barrier, no workspace traffic); small pays
// one barrier: a cluster's up to small_cluster_max_tokens, then a grid's;
// large exchanges counts over a grid of up to one CTA per multiprocessor.
struct Thresholds {
    int32_t image_arch;
    int32_t tiny_max_tokens;
    int32_t small_cluster_max_tokens;  // small as one cluster of at most kMaxClusterCtas CTAs
    int32_t small_max_tokens;
    int32_t small_tokens_per_cta;  // at least this many tokens per CTA
    int32_t large_tokens_per_cta;  // at least this many tokens per CTA
    int32_t token_ctas_max_tokens;  // small, a token a CTA (at most kMaxTokenCtas), for token_ctas_hold's calls
};

// sm_90a: from the H200 sweep in bench/RESULTS.md (E512 k10: large is the
// faster from 192 tokens on). small keeps its cluster up to 256 tokens
// when it is forced. small puts at least 8 tokens on a CTA, half its warps:
// selection is bound by the instructions an SM issues, so up to 64 tokens
// the cluster's extra CTAs pay (measured: E512 M32 -0.48 us, E256 M64
// -0.66 us). large too puts at least 8 tokens on a CTA: up to one token
// per warp a CTA selects in about the same time, and fewer CTAs exchange
// their counts sooner (measured: E512 M512 on 64 CTAs -0.13 us against
// 128; 16 tokens on 32 CTAs +0.2 us). Up to kMaxTokenCtas tokens, the
// calls token_ctas_hold takes rank a token a CTA, one cluster (DeepSeek-V3
// at 2 to 16 tokens 4.2 to 4.9 us, against 5.3 to 6.5 with a warp a token;
// bench/RESULTS.md). The Blackwell rows are the Hopper values until they
// are measured there.
const Thresholds kThresholds[] = {
    {90, 16, 256, 128, kWarpsPerBlock / 2, kWarpsPerBlock / 2, kMaxTokenCtas},
    {100, 16, 256, 128, kWarpsPerBlock / 2, kWarpsPerBlock / 2, kMaxTokenCtas},
    {103, 16, 256, 128, kWarpsPerBlock / 2, kWarpsPerBlock / 2, kMaxTokenCtas},
};
const Thresholds kDefaultThresholds = {0, 16, 256, 128, kWarpsPerBlock / 2, kWarpsPerBlock / 2, kMaxTokenCtas};

const Thresholds &thresholds_for(int32_t image_arch) {
    for (const Thresholds &t : kThresholds)
        if (t.image_arch == image_arch) return t;
    return kDefaultThresholds;
}

// In 64 bits: num_tokens may be INT32_MAX, where a + b - 1 would wrap.
int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Spreads num_tokens over at most max_ctas (>= 1) CTAs of at least
// min_per_cta tokens, dropping CTAs that would get none. Both results fit
// int32: per_cta <= max(num_tokens, min_per_cta), grid <= max_ctas.
void spread(int32_t num_tokens, int64_t max_ctas, int32_t min_per_cta, alphamoe_selection *s) {
    int64_t per_cta = div_up(num_tokens, max_ctas);
    if (per_cta < min_per_cta) per_cta = min_per_cta;
    s->tokens_per_cta = static_cast<int32_t>(per_cta);
    s->grid_ctas = static_cast<int32_t>(div_up(num_tokens, per_cta));
}

// The large kernel's grid: one CTA per multiprocessor, at most kMaxGridCtas.
int32_t large_grid_limit(const alphamoe_device_attributes &device) {
    return device.multiprocessor_count < kMaxGridCtas ? device.multiprocessor_count : kMaxGridCtas;
}

// Calls whose tokens the small kernel's token-CTA entry points rank a CTA
// each (kernels/common/route_kernel.cuh): sigmoid scoring over more than
// 128 candidates (DeepSeek-V3, Kimi-K2, GLM-4.5), whose sigmoids, bias and
// group scores cost one warp many times a softmax row, where the CTA ranks
// them one expert a thread. The CTA ranking's own conditions
// (one_token_select_flavoured.cuh): groups of 32 experts, and token bits,
// which an expert map rules out (route_cta.cuh).
bool token_ctas_hold(const alphamoe_router &router, int32_t num_tokens, const Thresholds &th) {
    const alphamoe_params &p = router.params;
    const int32_t candidates = shared_expert(router) ? p.num_experts - 1 : p.num_experts;
    return num_tokens >= 2 && num_tokens <= th.token_ctas_max_tokens && p.scoring == ALPHAMOE_SCORING_SIGMOID &&
           (1 << row_width_index(candidates)) >= kOneTokenEntryMinSlots && !(p.flags & ALPHAMOE_FLAG_EXPERT_MAP) &&
           (p.num_groups <= 1 || p.num_experts == p.num_groups * 32);
}

bool large_grid_holds(int32_t num_tokens, const alphamoe_device_attributes &device, const Thresholds &th,
                      int32_t top_k) {
    alphamoe_selection grid = {};
    spread(num_tokens > 0 ? num_tokens : 1, large_grid_limit(device), th.large_tokens_per_cta, &grid);
    return group_sums_hold(cta_grouping(grid.grid_ctas), grid.tokens_per_cta, top_k);
}

}  // namespace

alphamoe_status select_variant(const alphamoe_router &router, int32_t num_tokens,
                               const alphamoe_device_attributes &device, alphamoe_selection *out) {
    if (num_tokens < 0 || num_tokens > router.params.max_tokens) return ALPHAMOE_ERROR_NUM_TOKENS;
    if (!device_supports_flavour(router.params)) return ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR;
    if (device.compute_capability <= 0 || device.multiprocessor_count <= 0 ||
        device.cooperative_ctas_per_sm < 0)
        return ALPHAMOE_ERROR_INVALID_ARGUMENT;
    const int32_t image_arch = image_arch_for(device.compute_capability);
    if (image_arch == 0) return ALPHAMOE_ERROR_NO_IMAGE;
    const Thresholds &th = thresholds_for(image_arch);
    const bool can_cooperate = device.cooperative_launch != 0 && device.cooperative_ctas_per_sm >= 1;

    // Caller-supplied attributes can be anything up to INT32_MAX each: their
    // product is taken in 64 bits.
    const int64_t resident = static_cast<int64_t>(device.multiprocessor_count) * device.cooperative_ctas_per_sm;
    const int64_t max_grid = resident < kMaxGridCtas ? resident : kMaxGridCtas;
    const bool token_ctas = token_ctas_hold(router, num_tokens, th) && max_grid >= num_tokens;

    alphamoe_specialization spec =
        static_cast<alphamoe_specialization>(router.params.force_specialization);
    if (spec == ALPHAMOE_SPECIALIZATION_AUTO) {
        if ((num_tokens <= th.tiny_max_tokens && !token_ctas) || !can_cooperate)
            spec = ALPHAMOE_SPECIALIZATION_TINY;
        else if (num_tokens <= th.small_max_tokens)
            spec = ALPHAMOE_SPECIALIZATION_SMALL;
        else
            spec = ALPHAMOE_SPECIALIZATION_LARGE;
    } else if (spec != ALPHAMOE_SPECIALIZATION_TINY && !can_cooperate) {
        return ALPHAMOE_ERROR_UNSUPPORTED_DEVICE;
    }

    // large keeps a group's pairs of one expert in 27 bits (route_args.h);
    // past that (over a billion pairs on the H200) small's cooperative grid
    // routes the call.
    if (spec == ALPHAMOE_SPECIALIZATION_LARGE && !large_grid_holds(num_tokens, device, th, router.params.top_k)) {
        if (router.params.force_specialization == ALPHAMOE_SPECIALIZATION_LARGE)
            return ALPHAMOE_ERROR_UNSUPPORTED_DEVICE;
        spec = ALPHAMOE_SPECIALIZATION_SMALL;
    }

    alphamoe_selection s = {};
    s.struct_size = sizeof(s);
    s.specialization = spec;
    s.block_threads = kBlockThreads;
    s.image_arch = image_arch;
    const int32_t one_per_sm = large_grid_limit(device);
    const int32_t tokens = num_tokens > 0 ? num_tokens : 1;
    switch (spec) {
    case ALPHAMOE_SPECIALIZATION_SMALL:
        // Up to the cluster threshold the grid is one cluster (see
        // launches_as_cluster); co-scheduled either way.
        s.cooperative = 1;
        if (token_ctas) {
            s.tokens_per_cta = 1;
            s.grid_ctas = tokens;
        } else {
            spread(tokens, tokens <= th.small_cluster_max_tokens && max_grid > kMaxClusterCtas ? kMaxClusterCtas : max_grid,
                   th.small_tokens_per_cta, &s);
        }
        break;
    case ALPHAMOE_SPECIALIZATION_LARGE:
        s.cooperative = 1;
        spread(tokens, one_per_sm, th.large_tokens_per_cta, &s);
        break;
    default:
        s.cooperative = 0;
        s.grid_ctas = 1;
        s.tokens_per_cta = tokens;
        break;
    }
    *out = s;
    return ALPHAMOE_OK;
}

bool launches_as_cluster(const alphamoe_selection &selection) {
    return selection.specialization == ALPHAMOE_SPECIALIZATION_SMALL && selection.grid_ctas <= kMaxClusterCtas &&
           selection.tokens_per_cta <= kMaxClusterCtaTokens;
}

}  // namespace alphamoe

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
    s = read_struct(device, kDeviceAttributesSizeV1, &attrs);
    if (s != ALPHAMOE_OK) return s;
    s = check_output_struct(out, kSelectionSizeV1);
    if (s != ALPHAMOE_OK) return s;
    alphamoe_selection sel;
    s = select_variant(*router, num_tokens, attrs, &sel);
    if (s != ALPHAMOE_OK) return s;
    write_struct(sel, out);
    return ALPHAMOE_OK;
}
