// The exchange of counts by group sums, with no grid barrier: the large
// kernels' (large.cu), and the wide kernels' grids of at most kMaxExperts
// plan experts (wide.cu). The CTAs form about sqrt(n) groups of
// consecutive CTAs (cta_grouping, which the host works out). Each CTA
// writes its counts to its member row and adds them atomically into its
// group's sums (integer sums: the same in any order); each then adds up
// the group sums (at most 16 per expert) and the member rows of the CTAs
// before it in its group (at most 15), all read at once.
//
// No fence orders these writes: a group sum carries the number of CTAs that
// added to it and a member row is 1 + its count, so a CTA sees whether what
// it read is complete, and reads again what is not. That keeps the round
// trip of a release fence off the path every CTA waits on. With more than
// a warp of experts, so many polling warps would crowd L2 that each CTA
// first waits for the arrivals word instead, which says only that every
// CTA has sent its counts, not that they have landed.
//
// A call's exchange set must start at zero: the phase word's bit 31, which
// CTA 0 flips once every CTA has sent its counts (so every CTA has read
// it), names the set, and the call zeroes the other set, which the call
// before it used, for the call after it. Every kernel that exchanges this
// way keeps that rule, so calls of any kernel can share a workspace.
#ifndef ALPHAMOE_KERNELS_COMMON_GROUP_SUMS_EXCHANGE_CUH
#define ALPHAMOE_KERNELS_COMMON_GROUP_SUMS_EXCHANGE_CUH

#include <stdint.h>

#include "../route_args.h"
#include "relaxed_gpu.cuh"

namespace alphamoe {

// Up to this many plan experts every thread with an expert polls its counts
// (e8-m4096-k2-bm64); with more, so many polling warps crowd L2 that waiting
// for the arrivals first is faster (e128-m4096-k8-bm64).
constexpr int kPollingMaxExperts = 32;

struct CtaGroup {
    int32_t index;  // this CTA's group
    int32_t first;  // its first CTA
    int32_t count;  // the grid's groups
};

__device__ __forceinline__ CtaGroup cta_group(const RouteArgs &a, int cta) {
    CtaGroup g;
    g.index = static_cast<int32_t>(alphamoe_divide(static_cast<uint32_t>(cta), a.cta_groups.size_divisor));
    g.first = g.index * a.cta_groups.size;
    g.count = static_cast<int32_t>(alphamoe_divide(gridDim.x - 1u, a.cta_groups.size_divisor)) + 1;
    return g;
}

// The exchange set named by phase bit `phase_bit` (0 or 1).
__device__ __forceinline__ uint32_t *exchange_set(const RouteArgs &a, uint32_t phase_bit) {
    return a.workspace + kWsExchangeSetsWord + phase_bit * kWsExchangeSetWords;
}

// The phase word, read as early as the call may read global memory: the
// exchange needs it, and the ranking hides its latency.
__device__ __forceinline__ uint32_t read_exchange_phase(const RouteArgs &a) {
    return load_relaxed(a.workspace + kWsLargePhaseWord);
}

constexpr uint32_t kGroupSumPairsMask = (1u << kGroupSumArrivedShift) - 1u;

// Thread e < L: sends this CTA's count of expert e.
__device__ __forceinline__ void send_count(uint32_t *set, const CtaGroup &g, int32_t count) {
    const int e = threadIdx.x;
    store_relaxed(set + kWsSetMemberCountsWord + blockIdx.x * kMaxExperts + e, static_cast<uint32_t>(count) + 1u);
    add_relaxed(set + kWsSetGroupSumsWord + g.index * kMaxExperts + e,
                (1u << kGroupSumArrivedShift) + static_cast<uint32_t>(count));
}

// The call-wide count of expert e and the count of the CTAs before this
// one, from the group sums and this group's member rows, read until every
// one of them is complete.
__device__ __forceinline__ void read_counts(const uint32_t *set, const CtaGroup &g, int e, int32_t *total,
                                            int32_t *earlier) {
    const int members_before = blockIdx.x - g.first;
    // This code runs once per call, so its size (fetched cold) costs more
    // than its instruction count: every word sits at a constant offset from
    // one of two addresses (rows of kMaxExperts). The loads carry their own
    // predicates (load_relaxed_if_below), which keeps each address one
    // offset in every row width. Every CTA reads these words at once, so
    // only the grid's groups are read, as 32-bit words: 16-bit fields, half
    // the bytes, are slower (e512-m4096-k10-bm64).
    const uint32_t *group_row = set + kWsSetGroupSumsWord + e;
    const uint32_t *member_row = set + kWsSetMemberCountsWord + g.first * kMaxExperts + e;
    uint32_t all, arrived;
    int32_t before;
    do {
        uint32_t group[kMaxCtaGroups], member[kMaxGroupCtas - 1];
#pragma unroll
        for (int i = 0; i < kMaxCtaGroups; ++i)  // independent loads, in flight together
            group[i] = load_relaxed_if_below(i, g.count, group_row + i * kMaxExperts, 0u);
#pragma unroll
        for (int i = 0; i < kMaxGroupCtas - 1; ++i)
            member[i] = load_relaxed_if_below(i, members_before, member_row + i * kMaxExperts, 1u);
        all = 0;
        arrived = 0;
        before = 0;
#pragma unroll
        for (int i = 0; i < kMaxCtaGroups; ++i) {
            const uint32_t pairs = group[i] & kGroupSumPairsMask;
            all += pairs;
            arrived += group[i] >> kGroupSumArrivedShift;
            before += i < g.index ? static_cast<int32_t>(pairs) : 0;
        }
        // A member row of 0 is not written yet: then `unwritten` is negative.
        int32_t unwritten = 0;
#pragma unroll
        for (int i = 0; i < kMaxGroupCtas - 1; ++i) {
            const int32_t pairs = static_cast<int32_t>(member[i]) - 1;
            before += pairs;
            unwritten |= pairs;
        }
        if (arrived == gridDim.x && unwritten >= 0) break;
    } while (true);
    *total = static_cast<int32_t>(all);
    *earlier = before;
}

// Every thread of the CTA: in thread e < L (a.plan_experts <= kMaxExperts),
// count is this CTA's count of expert e, and the call-wide total and the
// count of the CTAs before this one come back in *total and *earlier.
// phase: read_exchange_phase's value. stage() runs once, in every thread,
// while the counts travel. kEarlyArrival: the arrival goes out before
// stage(), which the CTA that counts last would otherwise add to every
// CTA's wait (the large kernel's staged entry points); elsewhere it goes
// with the wait.
template <bool kEarlyArrival, typename Stage>
__device__ __forceinline__ void exchange_by_group_sums(const RouteArgs &a, uint32_t phase, int32_t count,
                                                       int32_t *total, int32_t *earlier, Stage stage) {
    const int e = threadIdx.x;
    const int L = a.plan_experts;
    const CtaGroup g = cta_group(a, blockIdx.x);
    // The CTA barrier takes every thread's phase as its operand, so each
    // thread's read has returned before the CTA sends a count, and so
    // before CTA 0 can flip the word.
    const uint32_t phase_bit = static_cast<uint32_t>(__syncthreads_or(static_cast<int>(phase >> 31)));
    uint32_t *set = exchange_set(a, phase_bit);
    if (e < L) send_count(set, g, count);
    uint32_t *arrivals = set + kWsSetArrivalsWord;
    const bool await_arrivals = L > kPollingMaxExperts;
    // The arrival says only that the counts were sent: a reader checks
    // each word it reads for completeness.
    if (kEarlyArrival && await_arrivals && threadIdx.x == 0) add_relaxed(arrivals, 1u);
    stage();
    if (await_arrivals) {
        if (threadIdx.x == 0) {
            if (!kEarlyArrival) add_relaxed(arrivals, 1u);
            while (load_relaxed(arrivals) != gridDim.x) {
            }
        }
        __syncthreads();
    }
    // Every lane of a warp that holds an expert polls, a lane past the last
    // expert on that expert's words: a warp only partly in the loop (fewer
    // than 32 experts, or 60) slows the CTA's placement after it
    // (e8-m4096-k2-bm64, e60-m4096-k4-bm64-qwen2-moe). Such a lane's sums
    // are read nowhere: the plan reads them below L.
    if ((e & ~31) < L) read_counts(set, g, min(e, L - 1), total, earlier);
    // Expert 0's sums are complete: every CTA has sent its counts.
    if (blockIdx.x == 0 && threadIdx.x == 0) store_relaxed(a.workspace + kWsLargePhaseWord, (phase_bit ^ 1u) << 31);
    // The other set, for the next call: no CTA of this call uses it.
    uint4 *next = reinterpret_cast<uint4 *>(exchange_set(a, phase_bit ^ 1u));
#pragma unroll 1
    for (int32_t w = blockIdx.x * kBlockThreads + e; w < kWsExchangeSetWords / 4; w += gridDim.x * kBlockThreads)
        __stcg(next + w, make_uint4(0u, 0u, 0u, 0u));
}

}  // namespace alphamoe

#endif
