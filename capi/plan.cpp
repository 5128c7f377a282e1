#include "plan.h"

#include "images.h"
#include "route_args.h"

namespace alphamoe {
namespace {

// Where each specialization takes over and how grids are shaped, for one
// image architecture (0: every architecture without a row of its own, the
// Blackwell images included). The shapes named guard each value:
// alphamoe-bench --sweep moves the boundaries.
struct Tuning {
    int32_t image_arch;
    // tiny, one CTA, routes up to this many tokens (e512-m8-k10-bm8,
    // e8-m16-k2-bm64): beyond, small's extra CTAs pay for their barrier.
    int32_t tiny_max_tokens;
    // small, a co-resident grid, up to this many (e512-m128-k8-bm16); large
    // from there (e512-m512-k10-bm8, where small in 16-CTA clusters is slower).
    int32_t small_max_tokens;
    // A forced small grid stays one cluster up to this many tokens.
    int32_t small_cluster_max_tokens;
    // Fewest tokens on a CTA: selection is bound by the instructions an SM
    // issues, so extra CTAs pay down to half a CTA's warps
    // (e512-m32-k8-bm16, e256-m64-k8-bm64), and fewer CTAs exchange their
    // counts sooner (e512-m512-k10-bm8).
    int32_t small_tokens_per_cta;
    int32_t large_tokens_per_cta;
    // A cluster of a token a CTA ranks each token with the whole CTA, up to
    // this many tokens, for sigmoid routers over rows of 8 slots or more
    // (e256-m8-k8-bm64-deepseek-v3).
    int32_t token_ctas_max_tokens;
    // A cooperative grid of a token a CTA ranks each token of a wide call
    // with the whole CTA, up to this many tokens, where the CTA's warps
    // would each rank a token alone (e896-m128-k16-bm64-kimi-k3).
    int32_t wide_token_ctas_max_tokens;
    // The staged entry points stage a CTA's pairs where they are more than
    // this many an expert: only runs of more than two pairs an expert pay
    // for the list and its scan (e512-m16384-k10-bm8, e8-m4096-k2-bm64;
    // not e128-m4096-k8-bm64).
    int32_t staged_min_pairs_per_expert;
};

constexpr Tuning kTunings[] = {
    {0, 16, 128, 256, kWarpsPerBlock / 2, kWarpsPerBlock / 2, kMaxTokenCtas, 128, 2},
};

const Tuning &tuning_for(int32_t image_arch) {
    for (const Tuning &t : kTunings)
        if (t.image_arch == image_arch) return t;
    return kTunings[0];
}

// In 64 bits: num_tokens may be INT32_MAX, where a + b - 1 would wrap.
int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Spreads num_tokens over at most max_ctas (>= 1) CTAs of at least
// min_per_cta tokens, dropping CTAs that would get none. Both results fit
// int32: per_cta <= max(num_tokens, min_per_cta), grid <= max_ctas.
void spread(int32_t num_tokens, int64_t max_ctas, int32_t min_per_cta, LaunchPlan *p) {
    int64_t per_cta = div_up(num_tokens, max_ctas);
    if (per_cta < min_per_cta) per_cta = min_per_cta;
    p->tokens_per_cta = static_cast<int32_t>(per_cta);
    p->grid_ctas = static_cast<int32_t>(div_up(num_tokens, per_cta));
}

// The large kernel's grid: one CTA per multiprocessor, at most kMaxGridCtas.
int32_t large_grid_limit(const alphamoe_device_attributes &device) {
    return device.multiprocessor_count < kMaxGridCtas ? device.multiprocessor_count : kMaxGridCtas;
}

bool large_grid_holds(int32_t num_tokens, const alphamoe_device_attributes &device, const Tuning &t,
                      int32_t top_k) {
    LaunchPlan grid = {};
    spread(num_tokens > 0 ? num_tokens : 1, large_grid_limit(device), t.large_tokens_per_cta, &grid);
    return group_sums_hold(cta_grouping(grid.grid_ctas), grid.tokens_per_cta, top_k);
}

// Anything but the renormalized softmax over all experts: such calls run
// the flavoured kernels, so the plain ones carry none of the flavours'
// steps. The logits' type alone is not a flavour: the plain kernels'
// half_logits entry points take 16-bit logits.
bool routes_a_flavour(const alphamoe_params &p) {
    const uint32_t flavour_flags =
        ALPHAMOE_FLAG_NO_RENORMALIZE | ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_EXPERT_MAP;
    return (p.flags & flavour_flags) != 0 || p.scoring != ALPHAMOE_SCORING_SOFTMAX || p.num_groups > 1 ||
           p.routed_scaling_factor != 1.0f || p.local_expert_count != p.num_experts || p.local_expert_begin != 0;
}

// What decides which entry points can run a call.
struct Call {
    const alphamoe_params *p;
    int32_t num_tokens;
    int width;        // the narrowest row width of the call's candidates
    bool half;        // 16-bit logits
    bool flavour;     // routes_a_flavour
    bool shared;      // shared-expert mode
    bool sqrt_softplus; // sqrt-softplus scoring: its kernels only
    bool wide;        // more experts or chosen ones than the narrow kernels hold: the wide kernels only
    bool hashed;      // hash routing: the wide kernels' hashed entry points, where warps take the tokens
};

// Calls the wide kernels run (kernels/wide.cu): rows or top-k past the
// narrow kernels' limits, hash routing, which reads the chosen logits only,
// so no row width holds it, and redundant experts, whose ids are physical
// experts the narrow kernels' plans do not hold.
bool wide_call(const alphamoe_params &p) {
    return p.num_experts > kMaxExperts || p.top_k > kMaxTopK ||
           (p.flags & (ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_REDUNDANT_EXPERTS));
}

Call call_of(const alphamoe_router &router, int32_t num_tokens) {
    const alphamoe_params &p = router.params;
    Call c;
    c.p = &p;
    c.num_tokens = num_tokens;
    c.shared = shared_expert(router);
    c.width = row_width_index(c.shared ? p.num_experts - 1 : p.num_experts);
    c.half = p.logits_type != ALPHAMOE_LOGITS_F32;
    c.flavour = routes_a_flavour(p);
    c.sqrt_softplus = p.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS;
    c.wide = wide_call(p);
    c.hashed = (p.flags & ALPHAMOE_FLAG_HASH_ROUTING) != 0;
    // The wide kernels' narrowest rows are of 16 slots; a hash-routing
    // call stages no row and takes them whatever its row.
    if (c.wide && (c.width < kWideFirstRowWidth || c.hashed))
        c.width = kWideFirstRowWidth;
    return c;
}

// Whether entry point `entry` computes the call's results. An entry point
// ranks rows of exactly its width: the narrowest holding the candidates
// (a wider one takes its unused slots for candidates). A variant's entry
// points take every call of their kernel but for the logits' type:
// half_logits ones read 16-bit logits only, the others of a plain kernel
// fp32 only; a plain kernel runs no flavour, and the plain tiny kernel
// holds only the plans of at most a token a warp. Sqrt-softplus calls run
// their kernels, which run no other scoring; wide calls the wide kernels,
// which run every scoring and logits type, their one-token entry points
// calls of one token only, and where warps take the tokens the hashed
// entry points hash-routing calls and the others every other call.
bool entry_serves(const EntryInfo &e, const Call &c) {
    const KernelInfo &k = kernel_info(e.kernel);
    if (e.width != c.width || k.wide != c.wide) return false;
    if (k.wide) {
        if (e.variant == kVariant_one_token) return c.num_tokens == 1;
        return e.variant == kVariant_token_ctas || (e.variant == kVariant_hashed) == c.hashed;
    }
    if (k.sqrt_softplus != c.sqrt_softplus) return false;
    const bool reads_half = e.variant == kVariant_half_logits || e.variant == kVariant_staged_half_logits;
    if (reads_half != c.half && (reads_half || !k.flavoured)) return false;
    if (k.flavoured) return true;
    return !c.flavour && (k.specialization != ALPHAMOE_SPECIALIZATION_TINY || c.num_tokens <= kWarpsPerBlock);
}

// Whether entry point `e` runs the plan's grid: a cluster beyond the
// portable size exchanges its counts only in the token-CTA entry points
// (kernels/small.cu); the others read those of kMaxClusterCtas CTAs.
bool entry_holds_grid(const EntryInfo &e, const LaunchPlan &plan) {
    // The wide kernels' token-CTA entry points rank one token a CTA only.
    if (kernel_info(e.kernel).wide && e.variant == kVariant_token_ctas) return plan.tokens_per_cta == 1;
    return plan.cluster_ctas <= kMaxClusterCtas || e.variant == kVariant_token_ctas;
}

// Whether a large-kernel CTA of tokens_per_cta tokens stages its pairs:
// where it counts by rows (more than a token a warp), the list fits, and
// its runs are long enough to pay for it.
bool stages_pairs(int32_t tokens_per_cta, const alphamoe_params &p, const Tuning &t) {
    const int64_t pairs = static_cast<int64_t>(tokens_per_cta) * p.top_k;
    return tokens_per_cta > kWarpsPerBlock && pairs <= kStagedMaxPairs &&
           pairs > static_cast<int64_t>(t.staged_min_pairs_per_expert) * p.local_expert_count;
}

// The kernel's view of the call, as PlanBits (in RouteArgs::flags), for the chosen
// kernel and variant.
uint32_t plan_bits_of(const LaunchPlan &plan, const Call &c, const Tuning &t) {
    const alphamoe_params &p = *c.p;
    const KernelInfo &k = kernel_info(plan.kernel);
    const Variant v = entry_info(plan.entry).variant;
    const bool expert_map = (p.flags & ALPHAMOE_FLAG_EXPERT_MAP) != 0;
    uint32_t bits = 0;
    if (k.wide) {
        // A wide grid of more than kWideOneBarrierCtas CTAs (not a token
        // a CTA) over plan experts that fit the exchange sets exchanges by
        // group sums, with no grid barrier (e384-m4096-k6-bm64-deepseek-v4-hash).
        if (plan.grid_ctas > kWideOneBarrierCtas && v != kVariant_token_ctas && p.local_expert_count <= kMaxExperts &&
            group_sums_hold(cta_grouping(plan.grid_ctas), plan.tokens_per_cta, p.top_k))
            bits |= kPlanGroupSums;
        return bits;
    }
    const bool one_cta = plan.specialization == ALPHAMOE_SPECIALIZATION_TINY;
    // A token a warp at most in one CTA, each token's k ids distinct plan
    // experts: the few-token plans (kernels/common/few_token_plan.cuh).
    const bool every_id_planned = !k.flavoured || (!expert_map && p.local_expert_count == p.num_experts);
    const bool few = one_cta && every_id_planned && c.num_tokens <= kWarpsPerBlock;
    if (few) bits |= kPlanFewTokens;
    if (few && c.num_tokens == 1) bits |= kPlanOneToken;
    if (few && c.num_tokens > 1 && !k.flavoured && c.num_tokens <= p.block_m &&
        p.block_m <= kTokenWarpsPlanMaxBlockM)
        bits |= kPlanTokenWarps;
    // A grid CTA of at most a token a warp counts its pairs as token bits
    // (kernels/common/route_cta.cuh): in the plain kernels and the
    // flavoured small one, where the ids of a token are distinct plan
    // experts (not under an expert map).
    const bool token_bits = !one_cta && plan.tokens_per_cta <= kWarpsPerBlock &&
                            (!k.flavoured || (plan.specialization == ALPHAMOE_SPECIALIZATION_SMALL && !expert_map));
    if (token_bits) bits |= kPlanTokenBits;
    if ((v == kVariant_staged || v == kVariant_staged_half_logits) && stages_pairs(plan.tokens_per_cta, p, t))
        bits |= kPlanStagedPairs;
    return bits;
}

// The routing of the flavoured kernel that runs the call.
Routing flavoured_routing(const Call &c) {
    return c.wide ? kRoutingWide : c.sqrt_softplus ? kRoutingSqrtSoftplus : kRoutingFlavours;
}

// Calls a grid of a token a CTA ranks each token with its whole CTA:
// sigmoid or sqrt-softplus scoring over rows of 8 slots or more
// (DeepSeek-V3, Kimi-K2, GLM-4.5, DeepSeek-V4), whose scores, bias and
// group scores cost one warp many times a softmax row. The CTA's ranking
// needs groups of 32 experts, and token bits, which an expert map rules
// out.
bool token_ctas_hold(const Call &c, const Tuning &t) {
    const alphamoe_params &p = *c.p;
    const KernelId small = kernel_of(ALPHAMOE_SPECIALIZATION_SMALL, c.shared, flavoured_routing(c));
    return c.num_tokens >= 2 && c.num_tokens <= t.token_ctas_max_tokens && p.scoring != ALPHAMOE_SCORING_SOFTMAX &&
           entry_of(small, kVariant_token_ctas, c.width) >= 0 && !(p.flags & ALPHAMOE_FLAG_EXPERT_MAP) &&
           (p.num_groups <= 1 || p.num_experts == p.num_groups * 32);
}

// Wide calls a cooperative grid of a token a CTA runs (the wide small
// kernel's token-CTA entry points): 2 up to the tuning's tokens.
bool wide_token_ctas_hold(const Call &c, const Tuning &t) {
    const KernelId small = kernel_of(ALPHAMOE_SPECIALIZATION_SMALL, c.shared, kRoutingWide);
    return c.wide && c.num_tokens >= 2 && c.num_tokens <= t.wide_token_ctas_max_tokens &&
           entry_of(small, kVariant_token_ctas, c.width) >= 0;
}

// The entry point of the plan's specialization that runs the call: the
// plain kernel where it serves, else the flavoured one; in it, the variant
// made for the call, else the plain one (every kernel has a plain entry
// point of every width: kernel_table.cpp checks).
void choose_entry(const Call &c, const Tuning &t, LaunchPlan *plan) {
    const bool token_ctas = plan->tokens_per_cta == 1 && c.num_tokens >= 2;
    const bool staged = plan->specialization == ALPHAMOE_SPECIALIZATION_LARGE &&
                        stages_pairs(plan->tokens_per_cta, *c.p, t);
    Variant preferred[6];
    int n = 0;
    if (c.num_tokens == 1) preferred[n++] = kVariant_one_token;
    if (token_ctas) preferred[n++] = kVariant_token_ctas;
    if (c.hashed) preferred[n++] = kVariant_hashed;
    if (staged) preferred[n++] = c.half ? kVariant_staged_half_logits : kVariant_staged;
    if (c.half) preferred[n++] = kVariant_half_logits;
    preferred[n++] = kVariant_plain;
    for (const Routing routing : {kRoutingPlain, flavoured_routing(c)}) {
        const KernelId kernel = kernel_of(plan->specialization, c.shared, routing);
        if (kernel == kKernelCount) continue;
        for (int i = 0; i < n; ++i) {
            const int32_t entry = entry_of(kernel, preferred[i], c.width);
            if (entry >= 0 && entry_serves(entry_info(entry), c) && entry_holds_grid(entry_info(entry), *plan)) {
                plan->kernel = kernel;
                plan->entry = entry;
                return;
            }
        }
    }
}

}  // namespace

bool device_supports_flavour(const alphamoe_params &p) {
    // The grouped selection keeps one group score per lane of a warp.
    return p.num_groups <= kMaxGpuGroups;
}

alphamoe_status plan_call(const alphamoe_router &router, int32_t num_tokens, const alphamoe_device_attributes &device,
                          LaunchPlan *out) {
    const alphamoe_params &p = router.params;
    if (num_tokens < 0 || num_tokens > p.max_tokens) return ALPHAMOE_ERROR_NUM_TOKENS;
    if (!device_supports_flavour(p)) return ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR;
    if (device.compute_capability <= 0 || device.multiprocessor_count <= 0 || device.cooperative_ctas_per_sm < 0 ||
        device.max_cluster_ctas < 0)
        return ALPHAMOE_ERROR_INVALID_ARGUMENT;
    const int32_t image_arch = image_arch_for(device.compute_capability);
    if (image_arch == 0) return ALPHAMOE_ERROR_NO_IMAGE;
    const Tuning &t = tuning_for(image_arch);
    const Call c = call_of(router, num_tokens);
    const bool can_cooperate = device.cooperative_launch != 0 && device.cooperative_ctas_per_sm >= 1;
    // Caller-supplied attributes can be anything up to INT32_MAX each: their
    // product is taken in 64 bits.
    const int64_t resident = static_cast<int64_t>(device.multiprocessor_count) * device.cooperative_ctas_per_sm;
    const int32_t grid_limit = c.wide ? kWideMaxGridCtas : kMaxGridCtas;
    const int64_t max_grid = resident < grid_limit ? resident : grid_limit;
    const int32_t max_cluster = device.max_cluster_ctas > 0 ? device.max_cluster_ctas : kMaxClusterCtas;
    // Each token's CTA co-resident: a cluster, or in the wide kernels a
    // cooperative grid.
    const bool token_ctas =
        max_grid >= num_tokens && ((token_ctas_hold(c, t) && num_tokens <= max_cluster) ||
                                   (can_cooperate && wide_token_ctas_hold(c, t)));

    alphamoe_specialization spec = static_cast<alphamoe_specialization>(p.force_specialization);
    if (spec == ALPHAMOE_SPECIALIZATION_AUTO) {
        if ((num_tokens <= t.tiny_max_tokens && !token_ctas) || !can_cooperate)
            spec = ALPHAMOE_SPECIALIZATION_TINY;
        else if (num_tokens <= t.small_max_tokens)
            spec = ALPHAMOE_SPECIALIZATION_SMALL;
        else
            spec = ALPHAMOE_SPECIALIZATION_LARGE;
    } else if (spec != ALPHAMOE_SPECIALIZATION_TINY && !can_cooperate) {
        return ALPHAMOE_ERROR_UNSUPPORTED_DEVICE;
    }
    // large keeps a group's pairs of one expert in 27 bits (route_args.h);
    // past that (over a billion pairs on a 132-SM device) small's
    // cooperative grid routes the call.
    if (spec == ALPHAMOE_SPECIALIZATION_LARGE && !c.wide && !large_grid_holds(num_tokens, device, t, p.top_k)) {
        if (p.force_specialization == ALPHAMOE_SPECIALIZATION_LARGE) return ALPHAMOE_ERROR_UNSUPPORTED_DEVICE;
        spec = ALPHAMOE_SPECIALIZATION_SMALL;
    }

    LaunchPlan plan = {};
    plan.specialization = spec;
    plan.image_arch = image_arch;
    const int32_t tokens = num_tokens > 0 ? num_tokens : 1;
    switch (spec) {
    case ALPHAMOE_SPECIALIZATION_SMALL:
        if (token_ctas) {
            plan.tokens_per_cta = 1;
            plan.grid_ctas = tokens;
            plan.cluster_ctas = c.wide ? 0 : tokens;  // the wide kernels exchange through the workspace only
        } else {
            // Up to the cluster threshold the grid is one cluster; beyond,
            // or where the context holds no such cluster, a cooperative grid.
            const int32_t cluster = max_cluster < kMaxClusterCtas ? max_cluster : kMaxClusterCtas;
            spread(tokens, tokens <= t.small_cluster_max_tokens && max_grid > cluster ? cluster : max_grid,
                   t.small_tokens_per_cta, &plan);
            // The wide kernels exchange through the workspace only.
            if (plan.grid_ctas <= cluster && plan.tokens_per_cta <= kMaxClusterCtaTokens && !c.wide)
                plan.cluster_ctas = plan.grid_ctas;
        }
        plan.cooperative = plan.cluster_ctas == 0;
        break;
    case ALPHAMOE_SPECIALIZATION_LARGE: {
        plan.cooperative = true;
        const int32_t limit = large_grid_limit(device);
        spread(tokens, c.wide && limit > kWideMaxGridCtas ? kWideMaxGridCtas : limit, t.large_tokens_per_cta, &plan);
        break;
    }
    default:
        plan.grid_ctas = 1;
        plan.tokens_per_cta = tokens;
        break;
    }
    choose_entry(c, t, &plan);
    plan.plan_bits = plan_bits_of(plan, c, t);
    *out = plan;
    return ALPHAMOE_OK;
}

int32_t plan_candidates(const LaunchPlan &chosen, const alphamoe_router &router, int32_t num_tokens, LaunchPlan *out,
                        int32_t capacity) {
    const Call c = call_of(router, num_tokens);
    const Tuning &t = tuning_for(chosen.image_arch);
    int32_t n = 0;
    const auto add = [&](int32_t entry) {
        if (n < capacity) {
            out[n] = chosen;
            out[n].entry = entry;
            out[n].kernel = entry_info(entry).kernel;
            out[n].plan_bits = plan_bits_of(out[n], c, t);
        }
        ++n;
    };
    add(chosen.entry);
    for (int32_t e = 0; e < kEntryCount; ++e) {
        const EntryInfo &info = entry_info(e);
        const KernelInfo &k = kernel_info(info.kernel);
        if (e != chosen.entry && k.specialization == chosen.specialization && k.shared_expert == c.shared &&
            entry_serves(info, c) && entry_holds_grid(info, chosen))
            add(e);
    }
    return n;
}

alphamoe_selection selection_of(const LaunchPlan &plan) {
    alphamoe_selection s = {};
    s.struct_size = sizeof(s);
    s.specialization = plan.specialization;
    s.grid_ctas = plan.grid_ctas;
    s.block_threads = kBlockThreads;
    s.cooperative = plan.cluster_ctas > 0 || plan.cooperative;
    s.image_arch = plan.image_arch;
    s.tokens_per_cta = plan.tokens_per_cta;
    s.cluster_ctas = plan.cluster_ctas;
    s.kernel_index = plan.kernel;
    s.entry_point_index = plan.entry;
    return s;
}

bool same_plan(const alphamoe_selection &a, const alphamoe_selection &b) {
    return a.specialization == b.specialization && a.grid_ctas == b.grid_ctas && a.block_threads == b.block_threads &&
           a.cooperative == b.cooperative && a.image_arch == b.image_arch && a.tokens_per_cta == b.tokens_per_cta &&
           a.cluster_ctas == b.cluster_ctas && a.kernel_index == b.kernel_index &&
           a.entry_point_index == b.entry_point_index;
}

}  // namespace alphamoe
