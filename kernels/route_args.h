// The kernel parameter block, shared by the host launcher and the kernels so
// the two can never disagree on its layout. Plain C++, no CUDA headers.
#ifndef ALPHAMOE_KERNELS_ROUTE_ARGS_H
#define ALPHAMOE_KERNELS_ROUTE_ARGS_H

#include <stdint.h>

#include "common/divisor.h"
#include "workspace.h"

#if defined(__CUDACC__)
#define ALPHAMOE_HOST_DEVICE __host__ __device__
#else
#define ALPHAMOE_HOST_DEVICE
#endif

namespace alphamoe {

// Threads per CTA of every router kernel: one warp per token in flight, and
// one thread per expert in the CTA-wide scans (E <= 512).
constexpr int kBlockThreads = 512;
constexpr int kWarpsPerBlock = kBlockThreads / 32;
// The narrow kernels' limits; wider rows and larger k run the wide
// kernels (kernels/wide.cu), whose limits are the library's.
constexpr int kMaxExperts = 512;
constexpr int kMaxTopK = 16;
constexpr int kWideMaxExperts = 2048;  // ALPHAMOE_MAX_EXPERTS
constexpr int kWideMaxTopK = 32;       // ALPHAMOE_MAX_TOP_K: a lane a chosen expert
// The workspace holds per-CTA expert counts for at most this many CTAs.
constexpr int kMaxGridCtas = 256;
// The small kernel's grid is one thread-block cluster: at most the portable
// cluster size, which every sm_90 and newer device schedules.
constexpr int kMaxClusterCtas = 8;
// The token-CTA entry points' grid (a CTA a token) is one cluster of up to
// this many CTAs: a size beyond the portable one, which Hopper and
// Blackwell schedule for a kernel that allows it (the host sets that, and
// checks that such a cluster fits the device).
constexpr int kMaxTokenCtas = 16;
// A cluster CTA's pairs of one expert fit 16 bits (the small kernel trades
// its counts as such): at most this many tokens of k <= kMaxTopK each.
constexpr int kMaxClusterCtaTokens = 65535 / kMaxTopK;

// Chosen ids a CTA's warp keeps in shared memory for the placement phase
// (route_cta.cuh): 16 bits each, which hold any id (E <= 512) and let 16
// tokens of k = 10 fit. The staged entry points keep a pair's id in the low
// kPairIdBits bits and its rank among the warp's pairs of its expert in
// the bits above, which hold ranks of up to kMaxPairRankTokens tokens a
// warp.
constexpr int kPairIdsPerWarp = 160;
constexpr int kPairIdBits = 9;
constexpr int32_t kMaxPairRankTokens = 1 << (16 - kPairIdBits);
static_assert(kMaxExperts <= (1 << kPairIdBits), "a plain pair id fits below its rank");

// A staged CTA lists at most this many pairs (stage_ranked_pairs,
// kernels/common/route_cta.cuh): its warps keep every pair, ranks included
// (a warp's pairs are at most ceil(T / 16) * k <= T * k / 16 + k).
constexpr int32_t kStagedMaxPairs = 2048;
static_assert(kStagedMaxPairs / kWarpsPerBlock + kMaxTopK <= kPairIdsPerWarp, "a staged warp keeps its pairs");
static_assert(kStagedMaxPairs / kWarpsPerBlock <= kMaxPairRankTokens, "and their ranks");

// The few-token plan by token warps (few_token_plan.cuh) takes block_m up
// to this: a lane's own loop writes a block's padding.
constexpr int32_t kTokenWarpsPlanMaxBlockM = 8;

enum RouteFlags : uint32_t {
    kFlagTailFill = 0x2u,        // same bit as ALPHAMOE_FLAG_TAIL_FILL
    kFlagNoRenormalize = 0x8u,   // same bit as ALPHAMOE_FLAG_NO_RENORMALIZE
    kFlagCorrectionBias = 0x10u, // same bit as ALPHAMOE_FLAG_CORRECTION_BIAS
    kFlagExpertMap = 0x20u,      // same bit as ALPHAMOE_FLAG_EXPERT_MAP
    kFlagHashRouting = 0x40u,    // same bit as ALPHAMOE_FLAG_HASH_ROUTING (read by the wide kernels only)
    kFlagRedundantExperts = 0x80u, // same bit as ALPHAMOE_FLAG_REDUNDANT_EXPERTS (the wide kernels only)
    kFlagSigmoid = 0x100u,       // sigmoid scoring
    kFlagSqrtSoftplus = 0x200u,  // sqrt-softplus scoring (read by the wide kernels only)
};

enum LogitsType : int32_t { kLogitsF32 = 0, kLogitsBf16 = 1, kLogitsF16 = 2 };

// How the kernel plans the call, decided by the host (capi/plan.cpp) for
// the call as a whole; a kernel compiles only the paths its entry point
// can take and reads these bits to choose among them. They ride in the
// high half of RouteArgs::flags: a word of their own would start a constant
// cache line no other argument needs, one more cold miss a call
// (e256-m8-k8-bm64-deepseek-v3 with cold code).
enum PlanBits : uint32_t {
    kPlanFewTokens = 0x10000u,    // one CTA, a token a warp at most, every id planned (few_token_plan.cuh)
    kPlanOneToken = 0x20000u,     // the few-token plan of one token
    kPlanTokenWarps = 0x40000u,   // the few-token plan by token warps (plain kernels)
    kPlanTokenBits = 0x80000u,    // a grid CTA of a token a warp at most counts by token bits (route_cta.cuh)
    kPlanStagedPairs = 0x100000u, // a staged entry point stages the CTA's pairs (route_cta.cuh)
    kPlanGroupSums = 0x200000u,   // a wide grid exchanges counts by group sums (group_sums_exchange.cuh)
};
static_assert(((kFlagTailFill | kFlagNoRenormalize | kFlagCorrectionBias | kFlagExpertMap | kFlagHashRouting |
                kFlagRedundantExperts | kFlagSigmoid | kFlagSqrtSoftplus) &
               (kPlanFewTokens | kPlanOneToken | kPlanTokenWarps | kPlanTokenBits | kPlanStagedPairs |
                kPlanGroupSums)) == 0,
              "RouteFlags and PlanBits share RouteArgs::flags");

// A wide kernel's dynamic shared memory (kernels/wide.cu): per warp a row
// of keys, then of counts; the CTA's bias and rows of offsets, totals and
// earlier counts; the warps' ranking scratch. The host reserves it for
// every wide entry point.
constexpr int kWideSharedBytes = 180 * 1024;
// A wide grid keeps its totals in the count table's row after its CTAs'.
constexpr int kWideMaxGridCtas = kMaxGridCtas - 1;
// A wide grid of up to this many CTAs sums the count table's rows after one
// grid barrier (e896-m128-k16-bm64-kimi-k3); a larger one over at most
// kMaxExperts plan experts exchanges by group sums (kPlanGroupSums).
constexpr int kWideOneBarrierCtas = 8;

// The grouped selection keeps one group score per lane.
constexpr int kMaxGpuGroups = 32;

static_assert(kMaxExperts == kWsMaxExperts && kMaxGridCtas == kWsMaxGridCtas, "the workspace is sized for these");
// The pairs of one expert in one group's token ranges must stay below this
// (the host checks: group_sums_hold).
constexpr int64_t kMaxGroupSumPairs = int64_t{1} << kGroupSumArrivedShift;
#if defined(ALPHAMOE_PHASE_CLOCKS) && ALPHAMOE_PHASE_CLOCKS
constexpr bool kPhaseClocks = true;
#else
constexpr bool kPhaseClocks = false;
#endif

// How the large kernel groups a grid of num_ctas CTAs: ceil(sqrt(n)) groups
// of consecutive CTAs, the last perhaps smaller, so at most kMaxCtaGroups
// groups of at most kMaxGroupCtas. The host works it out once per call, and
// the kernel divides a CTA's index by the group size with a multiply
// (common/divisor.h).
struct CtaGrouping {
    int32_t size;                   // CTAs per group (the last may have fewer)
    alphamoe_divisor size_divisor;  // divides by size
};

ALPHAMOE_HOST_DEVICE inline CtaGrouping cta_grouping(int32_t num_ctas) {
    int32_t groups = 1;
    while (groups * groups < num_ctas) ++groups;
    CtaGrouping g;
    g.size = (num_ctas + groups - 1) / groups;
    g.size_divisor = alphamoe_divisor_of(static_cast<uint32_t>(g.size));
    return g;
}

// Whether the large kernel's group sums hold the counts of a grid of
// `tokens_per_cta` tokens per CTA: a group's pairs of one plan expert are
// at most its tokens times k (at most one per token, but k where an expert
// map gives several experts one local id).
ALPHAMOE_HOST_DEVICE inline bool group_sums_hold(const CtaGrouping &g, int32_t tokens_per_cta, int32_t top_k) {
    return static_cast<int64_t>(g.size) * tokens_per_cta * top_k < kMaxGroupSumPairs;
}

struct RouteArgs {
    const void *logits;          // LogitsType elements
    int64_t row_stride;          // elements
    int32_t *topk_ids;           // [M, k]
    float *topk_weights;         // [M, k]
    int32_t *sorted_token_ids;   // [capacity]
    int32_t *expert_ids;         // [capacity / block_m]
    int32_t *num_tokens_post_padded;
    int32_t *expert_counts;      // optional
    int32_t *expert_offsets;     // optional
    int32_t *pair_to_sorted;     // optional
    uint32_t *workspace;
    int32_t num_tokens;          // M
    int32_t num_experts;         // E
    int32_t top_k;               // k
    int32_t block_m;
    int32_t capacity;            // sized capacity of sorted_token_ids (tail fill)
    int32_t tokens_per_cta;      // contiguous token range of one CTA
    uint32_t flags;              // RouteFlags | PlanBits
    int32_t logits_type;         // LogitsType
    const float *correction_bias;  // [E], with kFlagCorrectionBias
    const int32_t *expert_map;   // [E], with kFlagExpertMap
    float scale;                 // routed scaling factor
    int32_t num_groups;          // 1: no groups; else <= kMaxGpuGroups, divides E
    int32_t topk_groups;         // groups kept
    int32_t local_begin;         // expert parallelism by range: global id of local 0
    int32_t plan_experts;        // L: the plan's experts (E without expert parallelism)
    alphamoe_divisor block_m_divisor;  // divides by block_m
    CtaGrouping cta_groups;      // the large kernel's, for this grid
    const int32_t *token_ids;    // [M], with kFlagHashRouting
    const int32_t *hash_table;   // [vocab_size, k], with kFlagHashRouting
    int32_t vocab_size;
    int32_t replica_slots;       // R, with kFlagRedundantExperts
    const int32_t *logical_to_physical;  // [E, R], with kFlagRedundantExperts
    const int32_t *replica_count;        // [E], with kFlagRedundantExperts
    int32_t *physical_load;      // [P] or NULL, with kFlagRedundantExperts
    int32_t physical_experts;    // P, with kFlagRedundantExperts
};

}  // namespace alphamoe

#endif
