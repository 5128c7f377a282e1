// large: a persistent grid sized to the device, one exchange of counts at
// which no CTA waits for more than the counts it reads. The CTAs form about
// sqrt(n) groups of consecutive CTAs (cta_grouping, which the host works
// out). Each CTA writes its counts to its member row and adds them
// atomically into its group's sums (integer sums: the same in any order);
// each then adds up the group sums (at most 16 per expert) and the member
// rows of the CTAs before it in its group (at most 15), all read at once.
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
// before it used, for the call after it.
#include "common/kernel_name.cuh"
#include "common/relaxed_gpu.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

namespace {

// Up to this many plan experts every thread with an expert polls its counts
// (measured on the H200: E8 0.3 us faster than waiting for the arrivals;
// E128 0.6 us slower).
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

// Thread e < L: sends this CTA's count of expert e, in 32-bit words or,
// with kFlagNarrowExchange, in 16-bit fields (route_args.h): then experts
// 2w and 2w + 1 share group-sum word w, the odd one in its high half, and
// a row of member counts is kMaxExperts 16-bit fields.
__device__ __forceinline__ void send_count(uint32_t *set, const CtaGroup &g, int32_t count, bool narrow) {
    const int e = threadIdx.x;
    uint32_t *group_row = set + kWsSetGroupSumsWord + g.index * kMaxExperts;
    uint32_t *member_row = set + kWsSetMemberCountsWord + blockIdx.x * kMaxExperts;
    const uint32_t c = static_cast<uint32_t>(count);
    if (narrow) {
        store_relaxed_u16(reinterpret_cast<uint16_t *>(member_row) + e, static_cast<uint16_t>(c + 1u));
        add_relaxed(group_row + (e >> 1), ((1u << kNarrowSumArrivedShift) + c) << (16 * (e & 1)));
    } else {
        store_relaxed(member_row + e, c + 1u);
        add_relaxed(group_row + e, (1u << kGroupSumArrivedShift) + c);
    }
}

// Field i of the rows at `rows` (rows of kMaxExperts words, from expert
// e's field of row 0), if i < n, else `otherwise`.
template <bool kNarrow>
__device__ __forceinline__ uint32_t load_count_if_below(const uint32_t *rows, int e, int i, int32_t n,
                                                        uint32_t otherwise) {
    if constexpr (kNarrow)
        return load_relaxed_u16_if_below(i, n, reinterpret_cast<const uint16_t *>(rows) + e + i * 2 * kMaxExperts,
                                         otherwise);
    else
        return load_relaxed_if_below(i, n, rows + e + i * kMaxExperts, otherwise);
}

// Thread e < L: the call-wide count of expert e and the count of the CTAs
// before this one, from the group sums and this group's member rows, read
// until every one of them is complete.
template <bool kNarrow>
__device__ __forceinline__ void read_counts(const uint32_t *set, const CtaGroup &g, int32_t *total,
                                            int32_t *earlier) {
    constexpr int kArrivedShift = kNarrow ? kNarrowSumArrivedShift : kGroupSumArrivedShift;
    constexpr uint32_t kPairsMask = (1u << kArrivedShift) - 1u;
    const int e = threadIdx.x;
    const int members_before = blockIdx.x - g.first;
    // This code runs once per call, so its size (fetched cold) costs more
    // than its instruction count: every field sits at a constant offset
    // from one of two addresses. The loads carry their own predicates
    // (load_relaxed_if_below), which keeps each address one offset in
    // every row width. Every CTA reads these fields at once, and their
    // bytes, not their latency, bound the read (on the H200 about 0.9 us
    // at E512 M4096 with 32-bit words, where 128 CTAs read 17 an expert on
    // average): only the grid's groups are read, and narrow fields where
    // they hold.
    const uint32_t *group_rows = set + kWsSetGroupSumsWord;
    const uint32_t *member_rows = set + kWsSetMemberCountsWord + g.first * kMaxExperts;
    uint32_t all, arrived;
    int32_t before;
    do {
        uint32_t group[kMaxCtaGroups], member[kMaxGroupCtas - 1];
#pragma unroll
        for (int i = 0; i < kMaxCtaGroups; ++i)  // independent loads, in flight together
            group[i] = load_count_if_below<kNarrow>(group_rows, e, i, g.count, 0u);
#pragma unroll
        for (int i = 0; i < kMaxGroupCtas - 1; ++i)
            member[i] = load_count_if_below<kNarrow>(member_rows, e, i, members_before, 1u);
        all = 0;
        arrived = 0;
        before = 0;
#pragma unroll
        for (int i = 0; i < kMaxCtaGroups; ++i) {
            const uint32_t pairs = group[i] & kPairsMask;
            all += pairs;
            arrived += group[i] >> kArrivedShift;
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

template <int kSlots>
__device__ __forceinline__ void large(const RouteArgs &a) {
    __shared__ CtaShared sh;
    uint32_t *phase_word = a.workspace + kWsLargePhaseWord;
    uint32_t phase = 0;
    const auto read_phase = [&] { phase = load_relaxed(phase_word); };
    route_kernel_body<kSlots, kSharedExpert, kFlavoured>(
        a, sh,
        [&](int32_t count, int32_t *total, int32_t *earlier) {
            const int e = threadIdx.x;
            const int L = a.plan_experts;
            const CtaGroup g = cta_group(a, blockIdx.x);
            // The CTA barrier takes every thread's phase as its operand, so
            // each thread's read has returned before the CTA sends a count,
            // and so before CTA 0 can flip the word.
            const uint32_t phase_bit = static_cast<uint32_t>(__syncthreads_or(static_cast<int>(phase >> 31)));
            uint32_t *set = exchange_set(a, phase_bit);
            const bool narrow = (a.flags & kFlagNarrowExchange) != 0;
            if (e < L) send_count(set, g, count, narrow);
            if (L > kPollingMaxExperts) {
                if (threadIdx.x == 0) {
                    uint32_t *arrivals = set + kWsSetArrivalsWord;
                    add_relaxed(arrivals, 1u);
                    while (load_relaxed(arrivals) != gridDim.x) {
                    }
                }
                __syncthreads();
            }
            if (e < L) {
                if (narrow) read_counts<true>(set, g, total, earlier);
                else read_counts<false>(set, g, total, earlier);
            }
            // Expert 0's sums are complete: every CTA has sent its counts.
            if (blockIdx.x == 0 && threadIdx.x == 0) store_relaxed(phase_word, (phase_bit ^ 1u) << 31);
            // The other set, for the next call: no CTA of this call uses it.
            uint4 *next = reinterpret_cast<uint4 *>(exchange_set(a, phase_bit ^ 1u));
#pragma unroll 1
            for (int32_t w = blockIdx.x * kBlockThreads + e; w < kWsExchangeSetWords / 4; w += gridDim.x * kBlockThreads)
                __stcg(next + w, make_uint4(0u, 0u, 0u, 0u));
        },
        read_phase);
}

}  // namespace

ALPHAMOE_WIDTH_KERNELS(large, large)
