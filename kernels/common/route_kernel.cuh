// The body every router kernel runs. A specialization supplies only how the
// CTAs of its grid turn their per-CTA expert counts into call-wide totals
// and into the count of each expert held by earlier CTAs.
#ifndef ALPHAMOE_KERNELS_ROUTE_KERNEL_CUH
#define ALPHAMOE_KERNELS_ROUTE_KERNEL_CUH

#include "common/dependent_launch.cuh"
#include "common/grid_barrier.cuh"
#include "common/few_token_plan.cuh"
#include "common/one_token_select.cuh"
#include "common/one_token_select_flavoured.cuh"
#include "common/phase_clock.cuh"
#include "common/route_cta.cuh"

namespace alphamoe {

// Per-CTA expert counts in the workspace, a row of L (plan experts) per CTA:
// counts[cta * L + e]. Thread e of a CTA writes and reads word e of a row,
// so a warp's accesses are coalesced.
__device__ __forceinline__ int32_t *workspace_counts(const RouteArgs &a) {
    return reinterpret_cast<int32_t *>(a.workspace + kWsCountTableWord);
}

// Cooperative grids: publishes this CTA's count of expert threadIdx.x.
// Returns the table.
__device__ __forceinline__ int32_t *publish_counts(const RouteArgs &a, int32_t count) {
    int32_t *counts = workspace_counts(a);
    if (static_cast<int>(threadIdx.x) < a.plan_experts)
        __stcg(counts + blockIdx.x * a.plan_experts + threadIdx.x, count);
    return counts;
}

// publish_counts, then waits until every CTA has published.
__device__ __forceinline__ int32_t *publish_counts_and_wait(const RouteArgs &a, int32_t count) {
    int32_t *counts = publish_counts(a, count);
    grid_barrier(a.workspace + kWsBarrierWord, gridDim.x);
    return counts;
}

// A row toward L2, a 128-byte line per lane (and the line of its last
// byte).
template <bool kAnyType>
__device__ __forceinline__ void prefetch_row(const RouteArgs &a, int32_t token) {
    const int32_t at = (threadIdx.x & 31) * 128;
    const int32_t row_bytes = a.num_experts * (!kAnyType || a.logits_type == kLogitsF32 ? 4 : 2);
    const char *row = token_row<kAnyType>(a, token);
    if (at < row_bytes + 127) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + min(at, row_bytes - 1)));
}

// The warp's first row: its loads come only after the row-width dispatch,
// whose code is fetched cold, and this way the row's DRAM latency overlaps
// those fetches.
template <bool kAnyType>
__device__ __forceinline__ void prefetch_first_row(const RouteArgs &a, TokenRange range) {
    if (range.begin < range.end) prefetch_row<kAnyType>(a, range.begin);
}

// The tiny kernel with at most max_tokens tokens, a warp each: warp w's
// row (token w) toward L2 as soon as the logits may be read, before the
// token ranges and the choice of ranking that the loads of the row wait
// for. Returns whether the call has so few tokens. route_kernel_body asks
// for it for rows of 16 slots (e512-m1-k10-bm8, its -shared and -bf16
// twins, e512-m8-k10-bm8) and for one token of 8 that the CTA ranks
// (e256-m1-k8-bm64); a warp's row of 8 slots or fewer loads soon enough
// that it only costs (e256-m1-k8-bm64-deepseek-v3, e8-m16-k2-bm64).
template <bool kAnyType>
__device__ __forceinline__ bool prefetch_few_token_rows(const RouteArgs &a, int max_tokens) {
    if (a.num_tokens > max_tokens) return false;
    const int warp = threadIdx.x >> 5;
    if (warp < a.num_tokens) prefetch_row<kAnyType>(a, warp);
    return true;
}

// small and large with at most one token a warp: warp w's row (the CTA's
// token w) toward L2 right after the dependency wait, as
// prefetch_few_token_rows does in tiny. Returns whether the CTA holds so
// few tokens (e512-m32-k8-bm16, e512-m128-k8-bm16, e512-m512-k10-bm8,
// e256-m64-k8-bm64, e256-m1024-k8-bm64, e128-m64-k8-bm64). Not in the
// flavoured kernels' rows of 8 slots or fewer, where it only costs
// (e256-m128-k8-bm64-deepseek-v3).
template <bool kAnyType>
__device__ __forceinline__ bool prefetch_cta_token_rows(const RouteArgs &a) {
    if (a.tokens_per_cta > kWarpsPerBlock) return false;
    const int warp = threadIdx.x >> 5;
    const int64_t token = static_cast<int64_t>(blockIdx.x) * a.tokens_per_cta + warp;
    if (warp < a.tokens_per_cta && token < a.num_tokens) prefetch_row<kAnyType>(a, static_cast<int32_t>(token));
    return true;
}

// The rest of a call of at most one token per warp in one CTA
// (few_token_plan.cuh), once its tokens are ranked, in every thread.
// Called where the ranking ends, with an early return: the CTA's ranking
// of one token then runs on to the call's end in code laid out after it,
// where a return from one place would jump past the other rankings' code,
// each jump a wait for an instruction fetch when cold (e512-m1-k10-bm8, its
// -shared and -bf16 twins, e256-m1-k8-bm64-deepseek-v3; with cold code and
// without).
__device__ __forceinline__ void finish_few_token_call(const RouteArgs &a, CtaShared &sh, bool one_token_plan,
                                                      bool cta_ranked, bool token_warps_plan = false) {
    phase_clock(a, 2);
    phase_clock(a, 3);
    phase_clock(a, 4);
    if (one_token_plan) {
        if (threadIdx.x < 32 && !cta_ranked) write_one_token_blocks(a, sh);
        if (a.expert_counts || a.expert_offsets) write_one_token_expert_table(a, sh);
    } else {
        write_few_token_plan(a, sh, token_warps_plan);
    }
    phase_clock(a, 5);
    phase_clock(a, 6);
    allow_dependent_launch();
}

// The rest of a grid's call once its CTA's tokens are ranked, in every
// thread: the CTA's counts (from token bits or from the warps' rows), their
// exchange (the staged entry points list the pairs while the counts
// travel), the plan.
template <bool kFlavoured, bool kFewBlocksScan, typename Exchange>
__device__ __forceinline__ void finish_grid_call(const RouteArgs &a, CtaShared &sh, TokenRange range, Exchange exchange,
                                                 bool token_bits, bool staged_pairs) {
    phase_clock(a, 2);
    const int32_t count = token_bits ? cta_expert_count_from_bits(a, sh) : cta_expert_count(a, sh);
    phase_clock(a, 3);
    int32_t total = 0, earlier = 0;
    StagedPairs staged = {false, 0};
    exchange(count, &total, &earlier, [&] {
        staged.held = staged_pairs;
        if (staged.held) staged.run_start = stage_ranked_pairs(a, sh, range, count);
    });
    phase_clock(a, 4);
    const PlanGroups groups = place_pairs<kFlavoured, kFewBlocksScan>(a, sh, range, total, earlier, token_bits, staged);
    phase_clock(a, 5);
    write_plan_rest(a, sh, groups, token_bits);
    phase_clock(a, 6);
    allow_dependent_launch();
}

struct NoEarlyReads {
    __device__ void operator()() const {}
};

// exchange(count, &total, &earlier, stage) runs in every thread; in thread
// e < E, count is this CTA's count of expert e, and it must set the
// call-wide total and the count held by CTAs before this one. It may call
// stage() once, in every thread (it has CTA barriers), where it would
// otherwise wait for the other CTAs: in the staged entry points that lists
// the CTA's pairs in plan order (stage_ranked_pairs), in the rankings'
// scratch, which the exchange must then leave alone. early() runs in every
// thread before selection, as soon as global memory may be read: reads the
// exchange needs, whose latency selection then hides.
// kOneCta: the grid is this one CTA (the tiny kernel), which writes the
// plan of a call of at most one token per warp, every expert planned, as
// few_token_plan.cuh does; of one token, its padding while warp 0 ranks it.
// The plain tiny kernel takes no other call, and holds no other plan: the
// general plan's code, laid out between the ranking and the few-token
// plan, would cost those calls far jumps (e512-m8-k10-bm8 and its -shared
// twin with cold code).
// kSlots: the row width, slots per lane (the host chose the entry point
// by row_width_index). kOneTokenEntry: the flavoured tiny kernel's
// one-token entry point, where the CTA ranks a one-token call, or the
// flavoured small kernel's token-CTA one, where each CTA of a grid of a
// token a CTA ranks its token (token_ctas_hold, capi/plan.cpp).
// kFlavouredTokenBits: the flavoured kernel counts by token bits where they
// hold (route_cta.cuh; the plain kernels do wherever they hold but in tiny).
// kStagedPairs: the plain large kernel's staged entry points, which stage
// the pairs where the host plans it (kPlanStagedPairs: stages_pairs,
// capi/plan.cpp); elsewhere no staging code is built in. kHalfLogits: the
// entry points for 16-bit logits (select_tokens; one token the CTA ranks:
// select_one_token_by_cta).
// kFewBlocksScan: the block scan by ballots where every expert holds few
// blocks (place_pairs; the small kernel).
template <class Policy, typename Exchange, typename EarlyReads = NoEarlyReads>
__device__ __forceinline__ void route_kernel_body(const RouteArgs &a, CtaShared &sh, Exchange exchange,
                                                  EarlyReads early = EarlyReads()) {
    constexpr int kSlots = Policy::kSlots;
    constexpr bool kShared = Policy::kShared;
    constexpr bool kFlavoured = Policy::kFlavoured;
    constexpr bool kOneCta = Policy::kOneCta;
    constexpr bool kOneTokenEntry = Policy::kCtaRanksToken;
    constexpr bool kFlavouredTokenBits = Policy::kFlavouredTokenBits;
    constexpr bool kStagedPairs = Policy::kStagedPairs;
    constexpr bool kHalfLogits = Policy::kHalfLogits;
    constexpr bool kFewBlocksScan = Policy::kFewBlocksScan;
    constexpr bool kFewTokensOnly = kOneCta && !kFlavoured;
    phase_clock(a, 0);
    wait_for_preceding_kernel();
    phase_clock(a, 1);
    constexpr int kPrefetchTokens =
        !kOneCta ? 0 : kSlots >= 16 ? kWarpsPerBlock : !kFlavoured && kSlots >= kCtaRankMinSlots ? 1 : 0;
    constexpr bool kPrefetchCtaRows = !kOneCta && (!kFlavoured || kSlots >= 16);
    constexpr bool kAnyType = kFlavoured || kHalfLogits;  // rows of a.logits_type's element size
    const bool rows_prefetched = kPrefetchTokens > 0 ? prefetch_few_token_rows<kAnyType>(a, kPrefetchTokens)
                                 : kPrefetchCtaRows  ? prefetch_cta_token_rows<kAnyType>(a)
                                                     : false;
    early();
    if (route_empty_call(a)) {
        allow_dependent_launch();
        return;
    }
    const TokenRange range = cta_token_range(a, blockIdx.x);
    const int warp = threadIdx.x >> 5;
    const TokenRange warp_range = warp_token_range(range, warp);
    // The host planned the call (PlanBits in RouteArgs::flags); each path is compiled
    // only into the entry points that can take it.
    const bool token_bits = !kOneCta && (!kFlavoured || kFlavouredTokenBits) && (a.flags & kPlanTokenBits);
    // The plain tiny kernel takes only few-token calls (kFewTokensOnly).
    const bool few_token_plan = kFewTokensOnly || (kOneCta && (a.flags & kPlanFewTokens));
    const bool one_token_plan = few_token_plan && (a.flags & kPlanOneToken);
    // The plain tiny kernel's few-token plan of one block an expert marks
    // chosen experts as the tokens are ranked (few_token_plan.cuh). Not in
    // the flavoured kernels, whose calls at these shapes keep the CTA's
    // plan (e256-m8-k8-bm64-deepseek-v3).
    const bool chosen_bits = !kFlavoured && few_token_plan && (a.flags & kPlanTokenWarps);
    const bool staged_pairs = kStagedPairs && !kFlavoured && !kOneCta && (a.flags & kPlanStagedPairs);
    bool cta_ranked = false;  // one_token_select.cuh, one_token_select_flavoured.cuh
    if constexpr (!kFlavoured && kSlots >= kCtaRankMinSlots) {
        if (one_token_plan) cta_ranked = select_one_token_by_cta<kSlots, kShared, kHalfLogits>(a, sh);
    } else if constexpr (kFlavoured && kOneTokenEntry && kSlots >= kFlavouredCtaRankMinSlots) {
        if (one_token_plan) cta_ranked = select_one_token_by_cta_flavoured<kSlots, kShared>(a, sh);
    }
    if (cta_ranked) {
        finish_few_token_call(a, sh, true, true);
        return;
    }
    // A grid CTA of one token ranks it as the one-token call does, each
    // warp taking its share of the sigmoids, the bias and the group scores,
    // where one warp would take them over all its slots. It tallies the
    // token's ids as token bits, and steps aside, having written nothing,
    // where the warp's ranking is needed. The call then runs on to its end
    // in code of its own, laid out after the ranking, as the one-token call
    // does (finish_few_token_call), rather than jumping past the warps'
    // ranking (e256-m8-k8-bm64-deepseek-v3, with cold code and without).
    if constexpr (kFlavoured && !kOneCta && kOneTokenEntry && kSlots >= kFlavouredCtaRankMinSlots) {
        if (token_bits && range.end - range.begin == 1 &&
            select_one_token_by_cta_flavoured<kSlots, kShared, true>(a, sh, range.begin)) {
            finish_grid_call<kFlavoured, kFewBlocksScan>(a, sh, range, exchange, true, false);
            return;
        }
    }
    if (!rows_prefetched) prefetch_first_row<kAnyType>(a, warp_range);
    if (one_token_plan && warp != 0) write_one_token_padding(a, threadIdx.x - 32, kBlockThreads - 32);
    if (few_token_plan && !one_token_plan && !chosen_bits) clear_token_masks(sh);
    select_tokens<kSlots, kShared, kFlavoured, kHalfLogits, kFewTokensOnly>(a, sh, warp_range,
                                                                            chosen_bits    ? kTallyChosenBits
                                                                            : few_token_plan ? kTallyNone
                                                                            : token_bits   ? kTallyBits
                                                                            : staged_pairs ? kTallyRankedRows
                                                                                           : kTallyRows);
    if (few_token_plan) {
        finish_few_token_call(a, sh, one_token_plan, false, chosen_bits);
        return;
    }
    finish_grid_call<kFlavoured, kFewBlocksScan>(a, sh, range, exchange, token_bits, staged_pairs);
}

}  // namespace alphamoe

#endif
