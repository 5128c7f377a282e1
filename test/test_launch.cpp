/* alphamoe_route through a fake CUDA driver (fault_driver/fake_driver.cpp),
 * which presents one device and records every kernel launch instead of
 * running it: what the library launches must be what it says it would.
 * For every routing flavour, specialization, flag and token count:
 *   - the launch configuration is alphamoe_router_select's for the
 *     attributes of the call's context (grid, block, the cluster or
 *     cooperative attribute as the header describes them, PDL with its
 *     flag, the stream), the entry point the one it names; one launch a
 *     call, and a refused launch is the call's status;
 *   - the kernel is the one for the parameters: its specialization and
 *     expert mode, the first version's kernels only for the first
 *     version's routing (any flavour, the routed scaling factor included,
 *     needs the flavoured ones), the entry point for 16-bit logits where
 *     the plain kernels take them, the row width of the candidates;
 *   - the parameter block (kernels/route_args.h) carries the router's
 *     normalized parameters, the call's buffers, the sized capacity, the
 *     kernel flags of the public ones, the selection's tokens per CTA and
 *     the plan bits route_args.h documents for the entry point launched;
 *   - alphamoe_router_candidates gives every entry point that serves the
 *     call on the selection's grid, the selection first, and
 *     alphamoe_route_with_plan launches each as it says and refuses a plan
 *     that is none of them.
 * argv[1] names the device: "h100" (132 multiprocessors), "partitioned"
 * (16, where a cluster of 16 CTAs does not fit) or "green" (132, in a
 * context that holds 20 of them). Needs no GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
extern "C" {
#include <cmocka.h>
}

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

extern "C" {
#include "test_support.h"
}
#include "fault_driver/fake_driver.h"

namespace {

const int32_t kImageArchs[] = {ALPHAMOE_EXPECTED_ARCHS};

struct Device {
    const char *name;
    int sms, occupancy, clusters_fit;
    int context_sms;  // > 0: the context holds only these (a green context)
};
Device g_device;

fake_driver_reset_fn fake_reset;
fake_driver_refuse_fn fake_refuse;
fake_driver_launch_count_fn fake_launch_count;
fake_driver_launch_fn fake_launch;

int g_launches_checked = 0;

/* The first version's routing is the renormalized softmax over all experts
 * at scale 1 (of any logits type): anything else is a flavour. */
bool is_flavour(const alphamoe_params &p) {
    const uint32_t flavour_flags = ALPHAMOE_FLAG_NO_RENORMALIZE | ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_EXPERT_MAP;
    return (p.flags & flavour_flags) || p.scoring != ALPHAMOE_SCORING_SOFTMAX || p.num_groups > 1 ||
           p.routed_scaling_factor != 1.0f || p.local_expert_begin != 0 || p.local_expert_count != p.num_experts;
}

struct Call {
    alphamoe_router *router;
    alphamoe_params p;  // normalized
    alphamoe_sizes z;
    int32_t M;
    const void *logits;
    alphamoe_buffers b;
    CUstream stream;
    std::string what;
};

/* An entry point's name, read:
 * alphamoe_<specialization>_<routed|shared>[_flavours|_sqrt_softplus|_wide][_<variant>]_w<slots>. */
struct EntryName {
    std::string specialization, mode, variant;  // variant "" (plain) or "_<variant>"
    bool flavoured;     // a flavoured kernel: _flavours, _sqrt_softplus or _wide
    bool sqrt_softplus; // the sqrt-softplus kernels
    bool wide;          // the wide kernels
    int slots;
    std::string kernel() const {
        return specialization + "_" + mode +
               (wide ? "_wide" : sqrt_softplus ? "_sqrt_softplus" : flavoured ? "_flavours" : "");
    }
};

EntryName parse_entry_name(const std::string &name) {
    EntryName e = {"", "", "", false, false, false, 0};
    const std::string prefix = "alphamoe_";
    const size_t width_at = name.rfind("_w");
    if (name.compare(0, prefix.size(), prefix) != 0 || width_at == std::string::npos)
        fail_msg("%s: not an entry point's name", name.c_str());
    e.slots = atoi(name.c_str() + width_at + 2);
    std::string rest = name.substr(prefix.size(), width_at - prefix.size());
    const size_t spec_end = rest.find('_');
    e.specialization = rest.substr(0, spec_end);
    rest = spec_end == std::string::npos ? "" : rest.substr(spec_end + 1);
    const size_t mode_end = rest.find('_');
    e.mode = rest.substr(0, mode_end);
    rest = mode_end == std::string::npos ? "" : rest.substr(mode_end);
    const std::string flavours = "_flavours", sqrt_softplus = "_sqrt_softplus", wide = "_wide";
    if (rest.compare(0, wide.size(), wide) == 0) {
        e.wide = true;
        e.flavoured = true;  // every routing flavour, any logits type
        e.variant = rest.substr(wide.size());
        return e;
    }
    e.sqrt_softplus = rest.compare(0, sqrt_softplus.size(), sqrt_softplus) == 0;
    e.flavoured = e.sqrt_softplus || rest.compare(0, flavours.size(), flavours) == 0;
    e.variant = e.sqrt_softplus ? rest.substr(sqrt_softplus.size()) : e.flavoured ? rest.substr(flavours.size()) : rest;
    return e;
}

/* Calls the wide kernels run (test_support.h). */
bool wide_call(const alphamoe_params &p) { return gpu_wide_call(&p) != 0; }

/* The row width (slots of 32) of the call's candidates: the narrowest power
 * of two holding them, at least 16 in the wide kernels; 16 for hash
 * routing, which ranks no row. */
int row_slots(const alphamoe_params &p) {
    if (p.flags & ALPHAMOE_FLAG_HASH_ROUTING) return 16;
    const int32_t candidates = (p.flags & ALPHAMOE_FLAG_SHARED_EXPERT) ? p.num_experts - 1 : p.num_experts;
    int slots = wide_call(p) ? 16 : 1;
    while (32 * slots < candidates) slots *= 2;
    return slots;
}

/* RouteArgs.flags' plan bits as kernels/route_args.h documents each, for entry
 * point e on the selection's grid. */
uint32_t expected_plan_bits(const alphamoe_params &p, int32_t M, const alphamoe_selection &s, const EntryName &e) {
    if (e.wide) {
        // Group sums: a grid of more than kWideOneBarrierCtas CTAs, not a
        // token a CTA, over at most kMaxExperts plan experts, whose groups'
        // pairs of an expert fit the sums (route_args.h).
        int32_t groups = 1;
        while (groups * groups < s.grid_ctas) ++groups;
        const int64_t group_ctas = (s.grid_ctas + groups - 1) / groups;
        const bool group_sums = s.grid_ctas > alphamoe::kWideOneBarrierCtas && e.variant != "_token_ctas" &&
                                p.local_expert_count <= alphamoe::kMaxExperts &&
                                group_ctas * s.tokens_per_cta * p.top_k < (int64_t{1} << kGroupSumArrivedShift);
        return group_sums ? alphamoe::kPlanGroupSums : 0u;
    }
    const bool one_cta = s.specialization == ALPHAMOE_SPECIALIZATION_TINY;
    const bool expert_map = (p.flags & ALPHAMOE_FLAG_EXPERT_MAP) != 0;
    // Few tokens: one CTA, a token a warp at most, and each token's ids
    // distinct plan experts (always in the plain kernels; in the flavoured
    // ones without an expert map or a local range).
    const bool every_id_planned = !e.flavoured || (!expert_map && p.local_expert_count == p.num_experts);
    const bool few = one_cta && every_id_planned && M <= alphamoe::kWarpsPerBlock;
    uint32_t bits = 0;
    if (few) bits |= alphamoe::kPlanFewTokens;
    if (few && M == 1) bits |= alphamoe::kPlanOneToken;
    if (few && !e.flavoured && M >= 2 && M <= p.block_m && p.block_m <= alphamoe::kTokenWarpsPlanMaxBlockM)
        bits |= alphamoe::kPlanTokenWarps;
    // Token bits: a grid CTA of a token a warp at most, in the plain kernels
    // and the flavoured small one without an expert map.
    if (!one_cta && s.tokens_per_cta <= alphamoe::kWarpsPerBlock &&
        (!e.flavoured || (s.specialization == ALPHAMOE_SPECIALIZATION_SMALL && !expert_map)))
        bits |= alphamoe::kPlanTokenBits;
    // Staged pairs: a staged entry point whose CTA counts by rows, whose
    // pairs fit the list and average more than two an expert (the tuning
    // in capi/plan.cpp).
    const int64_t pairs = static_cast<int64_t>(s.tokens_per_cta) * p.top_k;
    if (e.variant.find("staged") != std::string::npos && s.tokens_per_cta > alphamoe::kWarpsPerBlock &&
        pairs <= alphamoe::kStagedMaxPairs && pairs > 2 * static_cast<int64_t>(p.local_expert_count))
        bits |= alphamoe::kPlanStagedPairs;
    return bits;
}

const CUlaunchAttribute *find_attribute(const FakeLaunch &l, CUlaunchAttributeID id) {
    for (unsigned i = 0; i < l.attribute_count; ++i)
        if (l.attributes[i].id == id) return &l.attributes[i];
    return nullptr;
}

/* One launch against the selection `s` it must carry out. chosen: s is
 * alphamoe_router_select's, whose entry point the call's parameters
 * decide; else one of the candidates, which must only serve the call. */
void check_launch(const Call &c, const FakeLaunch &l, const alphamoe_selection &s, bool chosen) {
    const alphamoe_params &p = c.p;
    const char *what = c.what.c_str();
    const int32_t M = c.M;
    if (l.parameter_count != 1) fail_msg("%s: the kernel got %d parameter blocks, not one", what, l.parameter_count);
    if (l.grid[0] != static_cast<unsigned>(s.grid_ctas) || l.grid[1] != 1 || l.grid[2] != 1)
        fail_msg("%s: grid %u x %u x %u, the selection says %d", what, l.grid[0], l.grid[1], l.grid[2], s.grid_ctas);
    if (l.block[0] != static_cast<unsigned>(s.block_threads) || l.block[1] != 1 || l.block[2] != 1)
        fail_msg("%s: block %u, the selection says %d", what, l.block[0], s.block_threads);
    if (l.stream != c.stream) fail_msg("%s: launched on stream %p, called with %p", what, (void *)l.stream, (void *)c.stream);

    // The kernel: alphamoe_<specialization>_<routed|shared>[_flavours|_sqrt_softplus]<variant>_w<slots>.
    const bool shared = (p.flags & ALPHAMOE_FLAG_SHARED_EXPERT) != 0;
    const std::string name = l.kernel;
    if (name != alphamoe_entry_point_name(s.entry_point_index))
        fail_msg("%s: launched %s, the selection names %s", what, l.kernel, alphamoe_entry_point_name(s.entry_point_index));
    const EntryName e = parse_entry_name(name);
    const bool half = p.logits_type != ALPHAMOE_LOGITS_F32;
    const bool token_ctas = s.specialization == ALPHAMOE_SPECIALIZATION_SMALL && s.tokens_per_cta == 1 && M >= 2;
    if (e.specialization != alphamoe_specialization_name(s.specialization) || e.mode != (shared ? "shared" : "routed") ||
        e.slots != row_slots(p))
        fail_msg("%s: launched %s, want alphamoe_%s_%s[_flavours]<variant>_w%d", what, l.kernel,
                 alphamoe_specialization_name(s.specialization), shared ? "shared" : "routed", row_slots(p));
    const std::string &variant = e.variant;
    if (variant != "" && variant != "_one_token" && variant != "_staged" && variant != "_half_logits" &&
        variant != "_staged_half_logits" && variant != "_token_ctas" && variant != "_hashed")
        fail_msg("%s: %s is no entry point the library has", what, l.kernel);
    if (!half && variant.find("half_logits") != std::string::npos)
        fail_msg("%s: fp32 logits launched on %s", what, l.kernel);
    if (half && !e.flavoured && variant.find("half_logits") == std::string::npos)
        fail_msg("%s: 16-bit logits launched on the plain kernels' fp32 entry point %s", what, l.kernel);
    if (variant.find("staged") != std::string::npos &&
        (e.flavoured || s.specialization != ALPHAMOE_SPECIALIZATION_LARGE))
        fail_msg("%s: %s", what, l.kernel);
    if (e.wide != wide_call(p))
        fail_msg("%s: launched %s, want %s kernel", what, l.kernel, wide_call(p) ? "a wide" : "no wide");
    // The wide kernels: plain entry points, the tiny routed kernel's
    // one-token ones, for one token and nothing else, the small routed
    // kernel's token-CTA ones, for grids of a token a CTA, and the routed
    // kernels' hashed ones, for hash routing and nothing else, where the
    // plain ones take every other call.
    const bool hashed = (p.flags & ALPHAMOE_FLAG_HASH_ROUTING) != 0;
    if (e.wide && variant != "" &&
        !(variant == "_one_token" && s.specialization == ALPHAMOE_SPECIALIZATION_TINY && !shared) &&
        !(variant == "_token_ctas" && s.specialization == ALPHAMOE_SPECIALIZATION_SMALL && !shared &&
          s.tokens_per_cta == 1) &&
        !(variant == "_hashed" && hashed && !shared))
        fail_msg("%s: %s is no entry point the library has", what, l.kernel);
    if (e.wide && variant != "_one_token" && variant != "_token_ctas" && (variant == "_hashed") != hashed)
        fail_msg("%s: %s for a call %s hash routing", what, l.kernel, hashed ? "of" : "without");
    if (chosen && e.wide && (variant == "_token_ctas") != (token_ctas && !shared))
        fail_msg("%s: %s, a CTA a token is %s (tokens per CTA %d)", what, l.kernel, token_ctas ? "selected" : "not",
                 s.tokens_per_cta);
    const bool one_token_call = M == 1 && s.specialization == ALPHAMOE_SPECIALIZATION_TINY && !shared;
    if (e.wide && (chosen || variant == "_one_token") && (variant == "_one_token") != one_token_call)
        fail_msg("%s: %s for %d tokens: the wide one-token entry point is %s", what, l.kernel, M,
                 M == 1 ? "wanted" : "not");
    if (chosen && !e.wide) {
        const bool flavoured = is_flavour(p) || (s.specialization == ALPHAMOE_SPECIALIZATION_TINY && M > 16);
        if (e.flavoured != flavoured)
            fail_msg("%s: launched %s, want the %s kernel", what, l.kernel, flavoured ? "flavoured" : "plain");
        if (e.sqrt_softplus != (p.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS))
            fail_msg("%s: launched %s for %s scoring", what, l.kernel,
                     p.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS ? "sqrt-softplus" : "other");
        // The CTA ranks a flavoured token of a routed row of 8 slots or more
        // (kernels/variants.def).
        const bool one_token = s.specialization == ALPHAMOE_SPECIALIZATION_TINY && M == 1 && flavoured && !shared &&
                               row_slots(p) >= 8;
        if ((variant == "_one_token") != one_token)
            fail_msg("%s: %s for %d tokens: the one-token entry point is %s", what, l.kernel, M,
                     one_token ? "wanted" : "not");
        if ((variant == "_token_ctas") != token_ctas)
            fail_msg("%s: %s, a CTA a token is %s (tokens per CTA %d)", what, l.kernel,
                     token_ctas ? "selected" : "not", s.tokens_per_cta);
    }

    // Attributes: one cluster where small's grid is one (header: at most 8
    // CTAs of at most 4095 tokens, or a CTA a token), else cooperative where
    // the selection says so; PDL with its flag; nothing else.
    const bool cluster = s.specialization == ALPHAMOE_SPECIALIZATION_SMALL && !e.wide &&
                         ((s.grid_ctas <= 8 && s.tokens_per_cta <= 4095) || token_ctas);
    if (s.cluster_ctas != (cluster ? s.grid_ctas : 0))
        fail_msg("%s: the selection's cluster is %d CTAs of a grid of %d", what, s.cluster_ctas, s.grid_ctas);
    const bool cooperative = s.cooperative && !cluster;
    const bool pdl = (p.flags & ALPHAMOE_FLAG_PDL) != 0;
    const CUlaunchAttribute *a = find_attribute(l, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    if (cluster != (a != nullptr)) fail_msg("%s: cluster attribute %s", what, a ? "given" : "missing");
    if (a && (a->value.clusterDim.x != static_cast<unsigned>(s.grid_ctas) || a->value.clusterDim.y != 1 ||
              a->value.clusterDim.z != 1))
        fail_msg("%s: cluster of %u, grid %d", what, a->value.clusterDim.x, s.grid_ctas);
    a = find_attribute(l, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
    if (cooperative != (a != nullptr && a->value.cooperative == 1))
        fail_msg("%s: cooperative attribute %s", what, a ? "given" : "missing");
    a = find_attribute(l, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    if (pdl != (a != nullptr && a->value.programmaticStreamSerializationAllowed == 1))
        fail_msg("%s: programmatic dependent launch %s", what, a ? "allowed without its flag" : "missing");
    if (l.attribute_count != static_cast<unsigned>(cluster + cooperative + pdl))
        fail_msg("%s: %u launch attributes", what, l.attribute_count);
    // The large kernels reserve just over half a multiprocessor's shared
    // memory (one CTA each), the wide ones what their CTA keeps there (but
    // the one-token ones, whose shared memory is static), the others none.
    const unsigned wide_smem = variant == "_one_token" ? 0u : static_cast<unsigned>(alphamoe::kWideSharedBytes);
    const unsigned want_smem = e.wide ? wide_smem
                               : s.specialization == ALPHAMOE_SPECIALIZATION_LARGE
                                   ? kFakeSharedPerSm / 2 + 1 - kFakeReservedPerCta - kFakeStaticSharedBytes
                                   : 0;
    if (l.shared_bytes != want_smem) fail_msg("%s: %u bytes of dynamic shared memory, want %u", what, l.shared_bytes, want_smem);

    // The parameter block.
    const alphamoe::RouteArgs &g = l.args;
    const alphamoe_buffers &b = c.b;
#define ARG(field, want)                                                                                \
    do {                                                                                                \
        if (!(g.field == (want))) fail_msg("%s: RouteArgs." #field " differs from " #want, what);        \
    } while (0)
    ARG(logits, c.logits);
    ARG(row_stride, p.logits_row_stride);
    ARG(topk_ids, b.topk_ids);
    ARG(topk_weights, b.topk_weights);
    ARG(sorted_token_ids, b.sorted_token_ids);
    ARG(expert_ids, b.expert_ids);
    ARG(num_tokens_post_padded, b.num_tokens_post_padded);
    ARG(expert_counts, b.expert_counts);
    ARG(expert_offsets, b.expert_offsets);
    ARG(pair_to_sorted, b.pair_to_sorted);
    ARG(workspace, static_cast<uint32_t *>(b.workspace));
    ARG(num_tokens, M);
    ARG(num_experts, p.num_experts);
    ARG(top_k, p.top_k);
    ARG(block_m, p.block_m);
    ARG(capacity, c.z.sorted_token_ids.elements);
    ARG(tokens_per_cta, s.tokens_per_cta);
    const bool replicas = (p.flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) != 0;
    const uint32_t kernel_flags = (p.flags & (ALPHAMOE_FLAG_TAIL_FILL | ALPHAMOE_FLAG_NO_RENORMALIZE |
                                              ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_EXPERT_MAP |
                                              ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_REDUNDANT_EXPERTS)) |
                                  (p.scoring == ALPHAMOE_SCORING_SIGMOID ? alphamoe::kFlagSigmoid : 0u) |
                                  (p.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS ? alphamoe::kFlagSqrtSoftplus : 0u);
    ARG(flags, kernel_flags | expected_plan_bits(p, M, s, e));
    ARG(logits_type, p.logits_type);
    ARG(correction_bias, (p.flags & ALPHAMOE_FLAG_CORRECTION_BIAS) ? b.correction_bias : nullptr);
    ARG(expert_map, (p.flags & ALPHAMOE_FLAG_EXPERT_MAP) ? b.expert_map : nullptr);
    ARG(scale, p.routed_scaling_factor);
    ARG(num_groups, p.num_groups);
    ARG(topk_groups, p.topk_groups);
    ARG(local_begin, p.local_expert_begin);
    ARG(plan_experts, p.local_expert_count);
    ARG(token_ids, hashed ? b.token_ids : nullptr);
    ARG(hash_table, hashed ? b.hash_table : nullptr);
    ARG(vocab_size, hashed ? p.vocab_size : 0);
    ARG(replica_slots, replicas ? p.replica_slots : 0);
    ARG(logical_to_physical, replicas ? b.logical_to_physical : nullptr);
    ARG(replica_count, replicas ? b.replica_count : nullptr);
    ARG(physical_load, replicas ? b.physical_load : nullptr);
    ARG(physical_experts, replicas ? p.num_physical_experts : 0);
    // Divisors: exact for a spread of numerators below 2^31.
    static const uint32_t numerators[] = {0, 1, 7, 255, 256, 4095, 65537, 1000003, 123456789, 2147483646, 2147483647};
    for (uint32_t n : numerators)
        if (alphamoe_divide(n, g.block_m_divisor) != n / static_cast<uint32_t>(p.block_m))
            fail_msg("%s: block_m divisor: %u / %d", what, n, p.block_m);
    // The large kernel's CTA groups: ceil(sqrt(grid)) groups, the last
    // perhaps smaller (route_args.h).
    int32_t groups = 1;
    while (groups * groups < s.grid_ctas) ++groups;
    ARG(cta_groups.size, (s.grid_ctas + groups - 1) / groups);
    for (uint32_t n = 0; n < 256; ++n)
        if (alphamoe_divide(n, g.cta_groups.size_divisor) != n / static_cast<uint32_t>(g.cta_groups.size))
            fail_msg("%s: CTA group divisor", what);
#undef ARG
    ++g_launches_checked;
}

alphamoe_device_attributes device_attributes() {
    alphamoe_device_attributes d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    const alphamoe_status st = alphamoe_device_attributes_query(0, &d);
    if (st != ALPHAMOE_OK) fail_msg("alphamoe_device_attributes_query: %s", alphamoe_status_string(st));
    if (d.max_cluster_ctas != (g_device.clusters_fit ? 16 : 8))
        fail_msg("attributes: clusters of %d, the fake device holds %d", d.max_cluster_ctas, g_device.clusters_fit ? 16 : 8);
    if (d.compute_capability != kImageArchs[0] || d.multiprocessor_count != g_device.sms ||
        d.cooperative_ctas_per_sm != g_device.occupancy || d.cooperative_launch != 1)
        fail_msg("attributes cc %d, %d SMs, occupancy %d, cooperative %d: not the fake device's", d.compute_capability,
                 d.multiprocessor_count, d.cooperative_ctas_per_sm, d.cooperative_launch);
    return d;
}

/* Whether entry point e computes the call's results on the selection's
 * grid (router_diagnostics.h: another variant, the flavoured kernel for a
 * plain call): its specialization, expert mode and row width; 16-bit logits
 * only in half_logits entry points, which take nothing else, fp32 ones
 * only in the others; a plain kernel only for the first version's routing,
 * its tiny one only for at most a token a warp; the wide tiny kernel's
 * one-token entry points only one token, its small kernel's token-CTA
 * ones only grids of a token a CTA, its hashed ones hash routing only and
 * its plain ones every other call; a cluster of more than 8
 * CTAs (a token a CTA) only in the token-CTA entry point. */
bool serves(const Call &c, const alphamoe_selection &s, const EntryName &e) {
    const alphamoe_params &p = c.p;
    const bool shared = (p.flags & ALPHAMOE_FLAG_SHARED_EXPERT) != 0;
    const bool half = p.logits_type != ALPHAMOE_LOGITS_F32;
    const bool reads_half = e.variant.find("half_logits") != std::string::npos;
    if (e.specialization != alphamoe_specialization_name(s.specialization) || e.mode != (shared ? "shared" : "routed") ||
        e.slots != row_slots(p))
        return false;
    if (e.wide != wide_call(p)) return false;
    if (e.wide) {  // every scoring and logits type
        if (e.variant == "_one_token") return c.M == 1;
        if (e.variant == "_token_ctas") return s.tokens_per_cta == 1;
        return (e.variant == "_hashed") == ((p.flags & ALPHAMOE_FLAG_HASH_ROUTING) != 0);
    }
    if (reads_half && !half) return false;
    if (s.cluster_ctas > 8 && e.variant != "_token_ctas") return false;
    if (e.sqrt_softplus != (p.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS)) return false;
    if (e.flavoured) return true;
    return reads_half == half && !is_flavour(p) &&
           (s.specialization != ALPHAMOE_SPECIALIZATION_TINY || c.M <= alphamoe::kWarpsPerBlock);
}

/* alphamoe_router_candidates: the selection first, then every other entry
 * point that serves the call, each once, on the selection's grid; each
 * launched by alphamoe_route_with_plan as it says. A plan of no candidate
 * is refused without a launch. */
void check_candidates(const Call &c, const alphamoe_device_attributes &d, const alphamoe_selection &s) {
    const char *what = c.what.c_str();
    const int32_t entries = alphamoe_entry_point_count();
    std::vector<alphamoe_selection> plans(static_cast<size_t>(entries) + 1);
    for (alphamoe_selection &plan : plans) {
        memset(&plan, 0xA5, sizeof plan);
        plan.struct_size = sizeof plan;
    }
    int32_t count = -1;
    assert_int_equal(alphamoe_router_candidates(c.router, c.M, &d, plans.data(), entries + 1, &count), ALPHAMOE_OK);
    if (count < 1 || count > entries) fail_msg("%s: %d candidates", what, count);
    if (memcmp(&plans[0], &s, sizeof s) != 0) fail_msg("%s: the first candidate is not the selection", what);
    std::vector<bool> listed(static_cast<size_t>(entries), false);
    for (int32_t i = 0; i < count; ++i) {
        const alphamoe_selection &plan = plans[static_cast<size_t>(i)];
        if (plan.entry_point_index < 0 || plan.entry_point_index >= entries || listed[plan.entry_point_index])
            fail_msg("%s: candidate %d names entry point %d", what, i, plan.entry_point_index);
        listed[plan.entry_point_index] = true;
        const char *name = alphamoe_entry_point_name(plan.entry_point_index);
        const char *kernel = alphamoe_kernel_name(plan.kernel_index);
        if (plan.struct_size != sizeof plan || plan.specialization != s.specialization ||
            plan.grid_ctas != s.grid_ctas || plan.block_threads != s.block_threads ||
            plan.cooperative != s.cooperative || plan.image_arch != s.image_arch ||
            plan.tokens_per_cta != s.tokens_per_cta || plan.cluster_ctas != s.cluster_ctas || kernel == nullptr ||
            parse_entry_name(name).kernel() != kernel)
            fail_msg("%s: candidate %d (%s) is not on the selection's grid, or not of its kernel", what, i, name);
    }
    for (int32_t e = 0; e < entries; ++e) {
        const bool want = serves(c, s, parse_entry_name(alphamoe_entry_point_name(e)));
        if (listed[e] != want)
            fail_msg("%s: %s is %s a candidate", what, alphamoe_entry_point_name(e), listed[e] ? "wrongly" : "not");
    }
    for (int32_t i = 0; i < count; ++i) {
        fake_reset();
        const alphamoe_status st = alphamoe_route_with_plan(c.router, c.M, c.logits, &c.b, &plans[static_cast<size_t>(i)],
                                                            reinterpret_cast<struct CUstream_st *>(c.stream));
        if (st != ALPHAMOE_OK || fake_launch_count() != 1)
            fail_msg("%s: candidate %s: status %s after %d launches", what,
                     alphamoe_entry_point_name(plans[static_cast<size_t>(i)].entry_point_index),
                     alphamoe_status_string(st), fake_launch_count());
        check_launch(c, *fake_launch(0), plans[static_cast<size_t>(i)], false);
    }
    // The selection on another grid, and the first entry point that serves
    // no such call, with its kernel.
    std::vector<alphamoe_selection> refused(1, s);
    refused[0].grid_ctas += 1;
    for (int32_t e = 0; e < entries && refused.size() == 1; ++e) {
        if (listed[e]) continue;
        alphamoe_selection unlisted = s;
        unlisted.entry_point_index = e;
        const std::string kernel = parse_entry_name(alphamoe_entry_point_name(e)).kernel();
        for (int32_t k = 0; k < alphamoe_kernel_count(); ++k)
            if (kernel == alphamoe_kernel_name(k)) unlisted.kernel_index = k;
        refused.push_back(unlisted);
    }
    for (const alphamoe_selection &plan : refused) {
        fake_reset();
        const alphamoe_status st = alphamoe_route_with_plan(c.router, c.M, c.logits, &c.b, &plan,
                                                            reinterpret_cast<struct CUstream_st *>(c.stream));
        if (st != ALPHAMOE_ERROR_INVALID_ARGUMENT || fake_launch_count() != 0)
            fail_msg("%s: a plan of no candidate (%s, grid %d): status %s after %d launches", what,
                     alphamoe_entry_point_name(plan.entry_point_index), plan.grid_ctas, alphamoe_status_string(st),
                     fake_launch_count());
    }
}

float g_logits[16];  // never read: the fake driver runs nothing
float g_bias[ALPHAMOE_MAX_EXPERTS];
int32_t g_map[ALPHAMOE_MAX_EXPERTS];
int32_t g_token_ids[8], g_hash_table[8];  // never read: the fake driver runs no kernel
int32_t g_replicas[8], g_replica_count[8], g_load[8];

/* Routes M tokens with r through the fake driver and checks every launch.
 * refuse: the first launch is refused with this result (0: none). */
void route_and_check(alphamoe_router *r, int32_t M, test_rng *rng, CUresult refuse, const char *label) {
    Call c;
    c.router = r;
    memset(&c.p, 0, sizeof c.p);
    c.p.struct_size = sizeof c.p;
    assert_int_equal(alphamoe_router_get_params(r, &c.p), ALPHAMOE_OK);
    memset(&c.z, 0, sizeof c.z);
    c.z.struct_size = sizeof c.z;
    assert_int_equal(alphamoe_router_sizes(r, &c.z), ALPHAMOE_OK);
    c.M = M;
    c.logits = g_logits;
    host_plan plan;
    assert_int_equal(host_plan_alloc(&plan, r, 1), 0);
    c.b = plan.buffers;
    if (rng_below(rng, 2)) c.b.expert_counts = nullptr;
    if (rng_below(rng, 2)) c.b.expert_offsets = nullptr;
    if (rng_below(rng, 2)) c.b.pair_to_sorted = nullptr;
    void *workspace = aligned_alloc(256, static_cast<size_t>(c.z.workspace.bytes + 255) / 256 * 256);
    assert_non_null(workspace);
    c.b.workspace = workspace;
    c.b.workspace_bytes = static_cast<size_t>(c.z.workspace.bytes);
    c.b.correction_bias = g_bias;
    c.b.expert_map = g_map;
    c.b.token_ids = g_token_ids;
    c.b.hash_table = g_hash_table;
    c.b.logical_to_physical = g_replicas;
    c.b.replica_count = g_replica_count;
    if (rng_below(rng, 2)) c.b.physical_load = g_load;
    c.stream = rng_below(rng, 2) ? nullptr : reinterpret_cast<CUstream>(static_cast<uintptr_t>(0x5000 + 16 * rng_below(rng, 100)));
    char what[512];
    snprintf(what, sizeof what,
             "%s: E=%d k=%d block_m=%d max=%d M=%d stride=%" PRId64 " flags=0x%x spec=%d scoring=%d type=%d groups=%d/%d "
             "scale=%g local=%d+%d%s",
             label, c.p.num_experts, c.p.top_k, c.p.block_m, c.p.max_tokens, M, c.p.logits_row_stride, c.p.flags,
             c.p.force_specialization, c.p.scoring, c.p.logits_type, c.p.num_groups, c.p.topk_groups,
             (double)c.p.routed_scaling_factor, c.p.local_expert_begin, c.p.local_expert_count,
             refuse ? ", first launch refused" : "");
    c.what = what;

    // The plan reads the call's context: a green context's multiprocessors,
    // and the clusters they hold, decided before any launch.
    alphamoe_device_attributes d = device_attributes();
    if (g_device.context_sms > 0) {
        d.multiprocessor_count = g_device.context_sms;
        d.max_cluster_ctas = g_device.context_sms >= 16 && g_device.clusters_fit ? 16 : 8;
    }
    alphamoe_selection s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    assert_int_equal(alphamoe_router_select(r, M, &d, &s), ALPHAMOE_OK);

    fake_reset();
    if (refuse) fake_refuse(1, refuse);
    const alphamoe_status st = alphamoe_route(r, M, c.logits, &c.b, reinterpret_cast<struct CUstream_st *>(c.stream));
    // One launch, the plan's; a refused one is the call's status.
    if (st != (refuse ? ALPHAMOE_ERROR_CUDA : ALPHAMOE_OK) || fake_launch_count() != 1)
        fail_msg("%s: status %s after %d launches", what, alphamoe_status_string(st), fake_launch_count());
    check_launch(c, *fake_launch(0), s, true);
    check_candidates(c, d, s);
    free(workspace);
    host_plan_free(&plan);
}

alphamoe_router *create(const alphamoe_params &p) {
    alphamoe_router *r = nullptr;
    const alphamoe_status st = alphamoe_router_create(&p, &r);
    if (st != ALPHAMOE_OK) fail_msg("create: %s", alphamoe_status_string(st));
    return r;
}

const int32_t kTokenCounts[] = {0, 1, 2, 5, 8, 12, 16, 17, 64, 100, 128, 129, 300, 1000, 4096};

/* The first version's routing and each flavour alone, then models. */
void launch_named(void **) {
    test_rng rng;
    rng_seed_for_test(&rng, 0x7001);
    struct Named {
        const char *name;
        alphamoe_params p;
    };
    std::vector<Named> named;
    const auto add = [&](const char *name, int32_t E, int32_t k, int32_t bm, auto edit) {
        alphamoe_params p = test_params(E, k, bm, 4096, 0u);
        edit(p);
        named.push_back({name, p});
    };
    add("first version E512 k10", 512, 10, 16, [](alphamoe_params &) {});
    add("first version E8 k2", 8, 2, 64, [](alphamoe_params &) {});
    add("shared expert E257 k5, tail fill, PDL", 257, 5, 8, [](alphamoe_params &p) {
        p.flags = ALPHAMOE_FLAG_SHARED_EXPERT | ALPHAMOE_FLAG_TAIL_FILL | ALPHAMOE_FLAG_PDL;
    });
    add("row stride 700", 512, 8, 32, [](alphamoe_params &p) { p.logits_row_stride = 700; });
    add("no renormalization", 64, 4, 16, [](alphamoe_params &p) { p.flags = ALPHAMOE_FLAG_NO_RENORMALIZE; });
    add("sigmoid", 64, 4, 16, [](alphamoe_params &p) { p.scoring = ALPHAMOE_SCORING_SIGMOID; });
    add("sigmoid, bias", 64, 4, 16, [](alphamoe_params &p) {
        p.scoring = ALPHAMOE_SCORING_SIGMOID;
        p.flags = ALPHAMOE_FLAG_CORRECTION_BIAS;
    });
    add("sqrt-softplus", 64, 4, 16, [](alphamoe_params &p) { p.scoring = ALPHAMOE_SCORING_SQRT_SOFTPLUS; });
    add("DeepSeek-V4-Pro", 384, 6, 64, [](alphamoe_params &p) {
        p.scoring = ALPHAMOE_SCORING_SQRT_SOFTPLUS;
        p.flags = ALPHAMOE_FLAG_CORRECTION_BIAS;
        p.routed_scaling_factor = 2.5f;
    });
    add("groups 8 keep 2", 64, 4, 16, [](alphamoe_params &p) {
        p.num_groups = 8;
        p.topk_groups = 2;
    });
    add("32 groups", 64, 4, 16, [](alphamoe_params &p) {
        p.num_groups = 32;
        p.topk_groups = 2;
    });
    add("scale 2.5 alone", 64, 4, 16, [](alphamoe_params &p) { p.routed_scaling_factor = 2.5f; });
    add("scale 2.5 alone, E512", 512, 10, 16, [](alphamoe_params &p) { p.routed_scaling_factor = 2.5f; });
    add("bf16 logits", 512, 10, 16, [](alphamoe_params &p) { p.logits_type = ALPHAMOE_LOGITS_BF16; });
    add("fp16 logits, shared", 64, 4, 16, [](alphamoe_params &p) {
        p.logits_type = ALPHAMOE_LOGITS_F16;
        p.flags = ALPHAMOE_FLAG_SHARED_EXPERT;
    });
    add("local range 16+16", 64, 4, 16, [](alphamoe_params &p) {
        p.local_expert_begin = 16;
        p.local_expert_count = 16;
    });
    add("expert map of 16", 64, 4, 16, [](alphamoe_params &p) {
        p.flags = ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_count = 16;
    });
    add("DeepSeek-V3, tail fill", 256, 8, 64, [](alphamoe_params &p) {
        p.scoring = ALPHAMOE_SCORING_SIGMOID;
        p.flags = ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_TAIL_FILL;
        p.num_groups = 8;
        p.topk_groups = 4;
        p.routed_scaling_factor = 2.5f;
    });
    add("Kimi-K2, bf16, PDL", 384, 8, 16, [](alphamoe_params &p) {
        p.scoring = ALPHAMOE_SCORING_SIGMOID;
        p.flags = ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_PDL;
        p.logits_type = ALPHAMOE_LOGITS_BF16;
        p.routed_scaling_factor = 2.827f;
    });
    add("Kimi-K3, wide rows", 896, 16, 64, [](alphamoe_params &p) {
        p.scoring = ALPHAMOE_SCORING_SIGMOID;
        p.flags = ALPHAMOE_FLAG_CORRECTION_BIAS;
    });
    add("E2048 k32, tail fill", 2048, 32, 64, [](alphamoe_params &p) { p.flags = ALPHAMOE_FLAG_TAIL_FILL; });
    add("E64 k17, sqrt-softplus", 64, 17, 8, [](alphamoe_params &p) { p.scoring = ALPHAMOE_SCORING_SQRT_SOFTPLUS; });
    add("shared expert E513 k4, bf16", 513, 4, 16, [](alphamoe_params &p) {
        p.flags = ALPHAMOE_FLAG_SHARED_EXPERT;
        p.logits_type = ALPHAMOE_LOGITS_BF16;
    });
    add("E1024 k24, expert map", 1024, 24, 16, [](alphamoe_params &p) {
        p.flags = ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_count = 300;
    });
    add("DeepSeek-V3 with 32 redundant experts over 8 ranks", 256, 8, 64, [](alphamoe_params &p) {
        p.scoring = ALPHAMOE_SCORING_SIGMOID;
        p.flags = ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_REDUNDANT_EXPERTS;
        p.num_groups = 8;
        p.topk_groups = 4;
        p.routed_scaling_factor = 2.5f;
        p.num_physical_experts = 288;
        p.replica_slots = 4;
        p.local_expert_begin = 36;
        p.local_expert_count = 36;
    });
    add("DeepSeek-V4 hash layer", 384, 6, 64, [](alphamoe_params &p) {
        p.scoring = ALPHAMOE_SCORING_SQRT_SOFTPLUS;
        p.flags = ALPHAMOE_FLAG_HASH_ROUTING;
        p.vocab_size = 129280;
        p.routed_scaling_factor = 1.5f;
    });
    for (const Named &n : named) {
        for (int32_t spec = ALPHAMOE_SPECIALIZATION_AUTO; spec <= ALPHAMOE_SPECIALIZATION_LARGE; ++spec) {
            alphamoe_params p = n.p;
            p.force_specialization = spec;
            alphamoe_router *r = create(p);
            for (int32_t M : kTokenCounts) route_and_check(r, M, &rng, CUDA_SUCCESS, n.name);
            alphamoe_router_destroy(r);
        }
    }
}

/* Random valid parameter sets the kernels run (at most 32 groups; hash
 * routing among them), random token counts, some first launches refused. */
void launch_random(void **) {
    test_rng rng;
    rng_seed_for_test(&rng, 0x7002);
    static const CUresult refusals[] = {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, CUDA_ERROR_INVALID_CLUSTER_SIZE,
                                        CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES};
    for (int i = 0; i < 600; ++i) {
        const int32_t E = 1 + static_cast<int32_t>(rng_below(&rng, ALPHAMOE_MAX_EXPERTS));
        const int32_t k =
            1 + static_cast<int32_t>(rng_below(&rng, static_cast<uint32_t>(E < ALPHAMOE_MAX_TOP_K ? E : ALPHAMOE_MAX_TOP_K)));
        alphamoe_params p = test_params(E, k, 1 + static_cast<int32_t>(rng_below(&rng, 256)),
                                        1 + static_cast<int32_t>(rng_below(&rng, 5000)), 0u);
        if (rng_below(&rng, 2)) p.flags |= ALPHAMOE_FLAG_TAIL_FILL;
        if (rng_below(&rng, 2)) p.flags |= ALPHAMOE_FLAG_PDL;
        const bool shared = k >= 2 && rng_below(&rng, 4) == 0;
        if (shared) p.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
        if (rng_below(&rng, 3) == 0) p.logits_row_stride = E + static_cast<int64_t>(rng_below(&rng, 9));
        p.force_specialization = rng_below(&rng, 2) ? 0 : static_cast<int32_t>(rng_below(&rng, 4));
        p.logits_type = static_cast<int32_t>(rng_below(&rng, 3));
        if (!shared && rng_below(&rng, 2)) {
            p.scoring = static_cast<int32_t>(rng_below(&rng, 3));
            if (p.scoring != ALPHAMOE_SCORING_SOFTMAX && rng_below(&rng, 2)) p.flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
            if (rng_below(&rng, 3) == 0) p.flags |= ALPHAMOE_FLAG_NO_RENORMALIZE;
            if (rng_below(&rng, 3) == 0) {
                int32_t g = 1 + static_cast<int32_t>(rng_below(&rng, 32));
                while (E % g) --g;
                int32_t keep = 1 + static_cast<int32_t>(rng_below(&rng, static_cast<uint32_t>(g)));
                while (static_cast<int64_t>(keep) * (E / g) < k) ++keep;
                p.num_groups = g;
                p.topk_groups = keep;
            }
            if (rng_below(&rng, 3) == 0) p.routed_scaling_factor = rng_below(&rng, 2) ? 2.5f : 0.5f;
            if (p.num_groups <= 1 && !(p.flags & ALPHAMOE_FLAG_CORRECTION_BIAS) && rng_below(&rng, 4) == 0) {
                p.flags |= ALPHAMOE_FLAG_HASH_ROUTING;
                p.vocab_size = 1 + static_cast<int32_t>(rng_below(&rng, 200000));
            }
            if (rng_below(&rng, 4) == 0) {
                p.flags |= ALPHAMOE_FLAG_REDUNDANT_EXPERTS;
                p.num_physical_experts = 1 + static_cast<int32_t>(rng_below(&rng, ALPHAMOE_MAX_EXPERTS));
                p.replica_slots = 1 + static_cast<int32_t>(rng_below(&rng, static_cast<uint32_t>(p.num_physical_experts)));
            }
            const int32_t routed = plan_routed_experts(&p);  // the range and the map are over these
            switch (rng_below(&rng, 4)) {
            case 1:
                p.local_expert_count = 1 + static_cast<int32_t>(rng_below(&rng, static_cast<uint32_t>(routed)));
                p.local_expert_begin =
                    static_cast<int32_t>(rng_below(&rng, static_cast<uint32_t>(routed - p.local_expert_count + 1)));
                break;
            case 2:
                p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
                p.local_expert_count = 1 + static_cast<int32_t>(rng_below(&rng, static_cast<uint32_t>(routed)));
                break;
            default: break;
            }
        }
        alphamoe_router *r = create(p);
        for (int j = 0; j < 3; ++j) {
            const uint32_t most = static_cast<uint32_t>(p.max_tokens) + 1;
            const int32_t M = static_cast<int32_t>(rng_below(&rng, rng_below(&rng, 2) && most > 20 ? 20 : most));
            const CUresult refuse = rng_below(&rng, 4) == 0 ? refusals[rng_below(&rng, 3)] : CUDA_SUCCESS;
            route_and_check(r, M, &rng, refuse, "random");
        }
        alphamoe_router_destroy(r);
    }
    print_message("# %d launches checked against the selection, the parameters and the buffers (%s device)\n",
                  g_launches_checked, g_device.name);
}

}  // namespace

int main(int argc, char **argv) {
    test_base_seed();
    const Device devices[] = {{"h100", 132, 1, 1, 0}, {"partitioned", 16, 1, 0, 0}, {"green", 132, 1, 1, 20}};
    g_device = devices[0];
    for (const Device &d : devices)
        if (argc > 1 && strcmp(argv[1], d.name) == 0) g_device = d;
    char value[32];
    snprintf(value, sizeof value, "%d", kImageArchs[0]);
    setenv("FAKE_DRIVER_CC", value, 1);
    snprintf(value, sizeof value, "%d", g_device.sms);
    setenv("FAKE_DRIVER_SMS", value, 1);
    snprintf(value, sizeof value, "%d", g_device.occupancy);
    setenv("FAKE_DRIVER_OCCUPANCY", value, 1);
    setenv("FAKE_DRIVER_CLUSTERS", g_device.clusters_fit ? "1" : "0", 1);
    snprintf(value, sizeof value, "%d", g_device.context_sms);
    setenv("FAKE_DRIVER_CONTEXT_SMS", value, 1);
    setenv("ALPHAMOE_CUDA_DRIVER", ALPHAMOE_FAKE_DRIVER, 1);
    int32_t count = 0;
    if (alphamoe_device_count(&count) != ALPHAMOE_OK || count != 1) {
        fprintf(stderr, "the library did not take the fake driver %s\n", ALPHAMOE_FAKE_DRIVER);
        return 1;
    }
    // The library holds the driver open: this finds the same object.
    void *driver = dlopen(ALPHAMOE_FAKE_DRIVER, RTLD_NOW | RTLD_NOLOAD);
    if (driver == nullptr) return 1;
    fake_reset = reinterpret_cast<fake_driver_reset_fn>(dlsym(driver, "fake_driver_reset"));
    fake_refuse = reinterpret_cast<fake_driver_refuse_fn>(dlsym(driver, "fake_driver_refuse"));
    fake_launch_count = reinterpret_cast<fake_driver_launch_count_fn>(dlsym(driver, "fake_driver_launch_count"));
    fake_launch = reinterpret_cast<fake_driver_launch_fn>(dlsym(driver, "fake_driver_launch"));
    if (!fake_reset || !fake_refuse || !fake_launch_count || !fake_launch) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(launch_named),
        cmocka_unit_test(launch_random),
    };
    return cmocka_run_group_tests_name(g_device.name, tests, nullptr, nullptr);
}
