// large: a persistent grid sized to the device, one grid barrier. The CTAs
// form about sqrt(n) groups of consecutive CTAs (cta_grouping, which the
// host works out). Before the barrier each CTA publishes its counts and
// adds them atomically into its group's sums (integer sums: the same in any
// order); after it each CTA adds up the group sums (at most 16 per expert)
// and the counts of the CTAs before it in its group (at most 15), all read
// at once. No CTA waits for another but at the barrier, and no second
// barrier or scan over all CTAs is needed.
//
// The group sums of a call must start at zero: the sums come in two sets,
// and the large barrier word's phase bit, which flips once per large call,
// names the set a call adds into. The call zeroes the other set, which the
// call before it used, for the call after it.
#include <cuda/atomic>

#include "common/kernel_name.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

namespace {

struct CtaGroup {
    int32_t index;  // this CTA's group
    int32_t first;  // its first CTA
};

__device__ __forceinline__ CtaGroup cta_group(const RouteArgs &a, int cta) {
    CtaGroup g;
    g.index = static_cast<int32_t>(alphamoe_divide(static_cast<uint32_t>(cta), a.cta_groups.size_divisor));
    g.first = g.index * a.cta_groups.size;
    return g;
}

// The set of group sums this call adds into (or, `other`, the one it
// zeroes), from the large barrier word as the call found it: the word's
// phase bit changes only once every CTA of the call has arrived at the
// barrier, after each has read it.
__device__ __forceinline__ int32_t *group_sum_set(const RouteArgs &a, uint32_t barrier_word, bool other) {
    const uint32_t set = (barrier_word >> 31) ^ (other ? 1u : 0u);
    return reinterpret_cast<int32_t *>(a.workspace + kWsGroupSumSetsWord) + set * kWsGroupSumSetWords;
}

// Thread e < L: the call-wide count of expert e and the count of the CTAs
// before this one, from the group sums and this group's published counts.
__device__ __forceinline__ void read_exchange(const int32_t *counts, const int32_t *sums, int32_t L,
                                              const CtaGroup &g, int32_t *total, int32_t *earlier) {
    const int e = threadIdx.x;
    const int members_before = blockIdx.x - g.first;
    // This code runs once per call, so its size (fetched cold) costs more
    // than its instruction count: the group sums sit at constant offsets
    // from one address (rows of kMaxExperts), and the member rows are
    // reached by stepping one address, not by 64-bit arithmetic per load.
    // Every group sum is read: those past the grid's groups are zero (the
    // call before zeroed the whole set), so they need no predicate.
    const int32_t *group_row = sums + e;
    const char *member_row = reinterpret_cast<const char *>(counts + g.first * L + e);
    const int64_t member_stride = static_cast<int64_t>(L) * sizeof(int32_t);
    int32_t group[kMaxCtaGroups], member[kMaxGroupCtas - 1];
#pragma unroll
    for (int i = 0; i < kMaxCtaGroups; ++i)  // independent loads, in flight together
        group[i] = __ldcg(group_row + i * kMaxExperts);
#pragma unroll
    for (int i = 0; i < kMaxGroupCtas - 1; ++i) {
        member[i] = i < members_before ? __ldcg(reinterpret_cast<const int32_t *>(member_row)) : 0;
        member_row += member_stride;
    }
    int32_t all = 0, before = 0;
#pragma unroll
    for (int i = 0; i < kMaxCtaGroups; ++i) {
        all += group[i];
        before += i < g.index ? group[i] : 0;
    }
#pragma unroll
    for (int i = 0; i < kMaxGroupCtas - 1; ++i) before += member[i];
    *total = all;
    *earlier = before;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kBlockThreads, 1)
    ALPHAMOE_KERNEL_NAME(large)(const RouteArgs a) {
    __shared__ CtaShared sh;
    uint32_t *barrier_word = a.workspace + kWsLargeBarrierWord;
    uint32_t barrier_word_before = 0;
    const auto read_phase = [&] {
        barrier_word_before =
            cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*barrier_word).load(cuda::std::memory_order_relaxed);
    };
    route_kernel_body<kSharedExpert, kFlavoured>(
        a, sh,
        [&](int32_t count, int32_t *total, int32_t *earlier) {
            const int32_t L = a.plan_experts;
            const int e = threadIdx.x;
            int32_t *counts = publish_counts(a, count);
            int32_t *sums = group_sum_set(a, barrier_word_before, false);
            const CtaGroup g = cta_group(a, blockIdx.x);
            if (e < L && count != 0) atomicAdd(sums + g.index * kMaxExperts + e, count);  // a reduction: no return
            grid_barrier(barrier_word, gridDim.x);
            if (e < L) read_exchange(counts, sums, L, g, total, earlier);
            // The other set, for the next call: no CTA of this call reads it.
            int32_t *next = group_sum_set(a, barrier_word_before, true);
#pragma unroll 1
            for (int32_t w = blockIdx.x * kBlockThreads + e; w < kWsGroupSumSetWords; w += gridDim.x * kBlockThreads)
                __stcg(next + w, 0);
        },
        read_phase);
}
