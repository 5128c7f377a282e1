// The kernel parameter block, shared by the host launcher and the kernels so
// the two can never disagree on its layout. Plain C++, no CUDA headers.
#ifndef ALPHAMOE_KERNELS_ROUTE_ARGS_H
#define ALPHAMOE_KERNELS_ROUTE_ARGS_H

#include <stdint.h>

#include "common/divisor.h"
#include "workspace_layout.h"

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
constexpr int kMaxExperts = ALPHAMOE_WS_MAX_EXPERTS;
constexpr int kMaxTopK = 16;  // ALPHAMOE_MAX_TOP_K
// Row widths: each kernel family and mode has one entry point per count of
// slots per lane, the fewest that hold a row's candidates. The host picks
// the entry point, so a call runs straight code with no width dispatch.
constexpr int kRowWidths = 5;  // 1, 2, 4, 8 and 16 slots
static_assert(kMaxExperts <= 32 * 16, "16 slots per lane hold every row");

// The entry point's index for n_candidates (>= 1) candidates per row.
ALPHAMOE_HOST_DEVICE inline int row_width_index(int32_t n_candidates) {
    const int32_t slots = (n_candidates + 31) / 32;
    return slots <= 1 ? 0 : slots <= 2 ? 1 : slots <= 4 ? 2 : slots <= 8 ? 3 : 4;
}

// The flavoured tiny kernel's one-token entry points, <kernel>_one_token_w<slots>,
// exist for rows of at least this many slots: there the CTA ranks a
// one-token call (one_token_select_flavoured.cuh). They are entry points
// of their own so that the other calls' code stays as it is without them.
constexpr int kOneTokenEntryMinSlots = 8;

// The workspace holds per-CTA expert counts for at most this many CTAs.
constexpr int kMaxGridCtas = ALPHAMOE_WS_MAX_GRID_CTAS;
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

// The plain large kernel's staged entry points (<kernel>_staged_w<slots>)
// list each CTA's pairs in plan order while the counts are exchanged and
// copy the list out in order (route_cta.cuh). The host launches them where
// pairs_staged holds: at most kStagedMaxPairs pairs a CTA, and more than
// kStagedMinPairsPerExpert an expert on average. The list and its scan
// cost the CTA that counts last in full; only runs of more than two pairs
// an expert pay for them (measured on the H200, bench/RESULTS.md ninth run:
// E512 16384 tokens, 2.4 pairs an expert a CTA, -0.46 us; E8 4096 tokens,
// 8, -0.09; E128 4096 tokens, 2, +0.37; E256 8192 tokens, 2, +0.22; E512
// 4096 tokens, 0.6, +0.28). Left in the other entry points, the unused
// staging code cost their calls 0.07 to 0.24 us.
constexpr int32_t kStagedMaxPairs = 2048;
constexpr int32_t kStagedMinPairsPerExpert = 2;
// At most kStagedMaxPairs pairs a CTA: its warps keep every pair, ranks
// included (a warp's pairs are at most ceil(T / 16) * k <= T * k / 16 + k).
static_assert(kStagedMaxPairs / kWarpsPerBlock + kMaxTopK <= kPairIdsPerWarp, "a staged warp keeps its pairs");
static_assert(kStagedMaxPairs / kWarpsPerBlock <= kMaxPairRankTokens, "and their ranks");
ALPHAMOE_HOST_DEVICE inline bool pairs_staged(int32_t tokens_per_cta, int32_t top_k, int32_t plan_experts) {
    const int64_t pairs = static_cast<int64_t>(tokens_per_cta) * top_k;
    return pairs <= kStagedMaxPairs && pairs > static_cast<int64_t>(kStagedMinPairsPerExpert) * plan_experts;
}

enum RouteFlags : uint32_t {
    kFlagTailFill = 0x2u,        // same bit as ALPHAMOE_FLAG_TAIL_FILL
    kFlagNoRenormalize = 0x8u,   // same bit as ALPHAMOE_FLAG_NO_RENORMALIZE
    kFlagCorrectionBias = 0x10u, // same bit as ALPHAMOE_FLAG_CORRECTION_BIAS
    kFlagExpertMap = 0x20u,      // same bit as ALPHAMOE_FLAG_EXPERT_MAP
    kFlagSigmoid = 0x100u,       // sigmoid scoring
};

enum LogitsType : int32_t { kLogitsF32 = 0, kLogitsBf16 = 1, kLogitsF16 = 2 };

// The grouped selection keeps one group score per lane.
constexpr int kMaxGpuGroups = 32;

// Workspace layout, in 32-bit words; the numbers are in workspace_layout.h,
// which the host programs that read a workspace include too. It must be
// zero before the first call; every call leaves it ready for the next (the
// small kernel's barrier word's low bits as it found them, the large
// kernel's next exchange set zero), so it needs zeroing only once.
// The small kernel's cooperative grid meets at this barrier word.
constexpr int kWsBarrierWord = ALPHAMOE_WS_BARRIER_WORD;
constexpr int kWsBarrierWords = 1;
// The large kernel's phase word: bit 31, flipped once per large call, names
// the exchange set the call uses; the other bits stay zero.
constexpr int kWsLargePhaseWord = ALPHAMOE_WS_LARGE_PHASE_WORD;
// Profiling builds (phase_clocks): CTA 0 stamps clock64() at its phase
// boundaries into header words 8.., as int64 values.
constexpr int kWsPhaseClockWord = ALPHAMOE_WS_PHASE_CLOCK_WORD;
constexpr int kPhaseClockCount = ALPHAMOE_WS_PHASE_CLOCK_COUNT;
constexpr int kWsHeaderWords = ALPHAMOE_WS_HEADER_WORDS;
// The large kernel's CTAs form groups of consecutive CTAs (about sqrt of the
// grid each, so at most 16 groups of at most 16).
constexpr int kMaxCtaGroups = ALPHAMOE_WS_MAX_CTA_GROUPS;
constexpr int kMaxGroupCtas = 16;
static_assert(kMaxGridCtas <= kMaxCtaGroups * kMaxGroupCtas, "groups must cover the largest grid");
// Two exchange sets follow the header (large kernel). A call uses the set
// its phase word names and zeroes the whole other set for the next call;
// sets of a fixed size at fixed places keep that true whatever the L of
// the calls sharing the workspace. In a set:
// - word 0: CTAs arrived (each adds 1 once its counts are on their way);
// - group sums, [g * kMaxExperts + e]: (CTAs of group g that added <<
//   kGroupSumArrivedShift) + pairs of expert e in their token ranges;
// - member counts, [c * kMaxExperts + e]: 1 + pairs of expert e in CTA c's
//   token range (0: not written yet).
// Every word says by itself whether it is complete, so a CTA needs no
// release fence before it arrives, nor an acquire after it.
constexpr int kGroupSumArrivedShift = 27;
// The pairs of one expert in one group's token ranges must stay below
// this (the host checks: group_sums_hold).
constexpr int64_t kMaxGroupSumPairs = int64_t{1} << kGroupSumArrivedShift;
static_assert(kMaxGroupCtas < (1 << (32 - kGroupSumArrivedShift)), "a group's CTAs fit above the pairs");
constexpr int kWsSetArrivalsWord = ALPHAMOE_WS_SET_ARRIVALS_WORD;
constexpr int kWsSetGroupSumsWord = ALPHAMOE_WS_SET_GROUP_SUMS_WORD;
constexpr int kWsSetMemberCountsWord = ALPHAMOE_WS_SET_MEMBER_COUNTS_WORD;
constexpr int kWsExchangeSetWords = ALPHAMOE_WS_EXCHANGE_SET_WORDS;
constexpr int kWsExchangeSetsWord = ALPHAMOE_WS_EXCHANGE_SETS_WORD;
static_assert(kWsExchangeSetWords % 32 == 0, "sets start 128-byte aligned");
// Then the small kernel's count table, counts[c * L + e] (L: the call's
// plan experts): pairs of expert e in CTA c's token range. At most
// kMaxGridCtas rows of at most E.
constexpr int kWsCountTableWord = ALPHAMOE_WS_COUNT_TABLE_WORD;
static_assert(kWsCountTableWord % 32 == 0, "the count table starts 128-byte aligned");
// Profiling builds (phase_clocks): 4 global-timer stamps per CTA (int64)
// after the count table, in words only their workspaces have: over the
// table, a CTA done with the exchange would overwrite counts that small's
// cooperative grid has still to read.
constexpr int kCtaTimerWords = kMaxGridCtas * ALPHAMOE_WS_CTA_TIMER_STAMPS * 2;
#if defined(ALPHAMOE_PHASE_CLOCKS) && ALPHAMOE_PHASE_CLOCKS
constexpr int kProfilingWords = kCtaTimerWords;
#else
constexpr int kProfilingWords = 0;
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

// The first word past the count table of a router of num_experts experts.
ALPHAMOE_HOST_DEVICE inline int64_t count_table_end_word(int32_t num_experts) {
    return kWsCountTableWord + static_cast<int64_t>(num_experts) * kMaxGridCtas;
}

ALPHAMOE_HOST_DEVICE inline int64_t workspace_words(int32_t num_experts) {
    return count_table_end_word(num_experts) + kProfilingWords;
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
    uint32_t flags;              // RouteFlags
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
};

}  // namespace alphamoe

#endif
