// large: a persistent grid sized to the device, one grid barrier. The CTAs
// form about sqrt(n) groups of consecutive CTAs. The last CTA of a group to
// publish its counts turns the group's counts into prefixes over the group
// and a group sum, before the barrier; after it each CTA adds up the group
// sums (at most 16 per expert) and reads its own prefix. A second barrier
// and a scan over all CTAs are not needed.
#include "common/kernel_name.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

namespace {

struct CtaGroup {
    int32_t count;    // groups in the grid
    int32_t size;     // CTAs per group (the last may have fewer)
    int32_t index;    // this CTA's group
    int32_t first;    // its first CTA
    int32_t members;  // its CTAs
};

__device__ __forceinline__ CtaGroup cta_group(int cta, int num_ctas) {
    CtaGroup g;
    int32_t groups = 1;
    while (groups * groups < num_ctas) ++groups;  // ceil(sqrt(n)) <= 16
    g.size = (num_ctas + groups - 1) / groups;
    g.count = (num_ctas + g.size - 1) / g.size;
    g.index = cta / g.size;
    g.first = g.index * g.size;
    g.members = min(g.size, num_ctas - g.first);
    return g;
}

// Counts the CTA into its group, after its counts are published; true, in
// every thread, in the group's last CTA to arrive, which then sees all of
// the group's counts. That CTA also resets the counter for the next call:
// no other CTA of the group touches it again in this call.
__device__ __forceinline__ bool arrive_last_in_group(uint32_t *workspace, const CtaGroup &g) {
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        cuda::atomic_ref<uint32_t, cuda::thread_scope_device> arrivals(
            workspace[kWsGroupArrivalWord + g.index * kWsGroupArrivalStride]);
        const uint32_t before = arrivals.fetch_add(1u, cuda::std::memory_order_release);
        last = before == static_cast<uint32_t>(g.members - 1);
        if (last) {
            arrivals.store(0u, cuda::std::memory_order_relaxed);
            cuda::atomic_thread_fence(cuda::std::memory_order_acquire, cuda::thread_scope_device);
        }
    }
    __syncthreads();
    return last != 0;
}

// Thread e: the group's counts of expert e become exclusive prefixes over
// the group, in place, and their sum goes to the group's row of sums.
// Thread e touches word e of each row: a warp's accesses are coalesced.
__device__ __forceinline__ void scan_group(int32_t *counts, int32_t *group_sums, int32_t L, const CtaGroup &g) {
    const int e = threadIdx.x;
    int32_t v[kMaxGroupCtas];
#pragma unroll
    for (int i = 0; i < kMaxGroupCtas; ++i)  // independent loads, in flight together
        v[i] = i < g.members ? __ldcg(counts + (g.first + i) * L + e) : 0;
    int32_t running = 0;
#pragma unroll
    for (int i = 0; i < kMaxGroupCtas; ++i) {
        if (i < g.members) __stcg(counts + (g.first + i) * L + e, running);
        running += v[i];
    }
    __stcg(group_sums + g.index * L + e, running);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kBlockThreads, 1)
    ALPHAMOE_KERNEL_NAME(large)(const RouteArgs a) {
    __shared__ CtaShared sh;
    route_kernel_body<kSharedExpert, kFlavoured>(a, sh, [&](int32_t count, int32_t *total, int32_t *earlier) {
        const int32_t L = a.plan_experts;
        int32_t *counts = publish_counts(a, count);
        int32_t *group_sums = counts + workspace_count_words(L);
        const int e = threadIdx.x;
        const CtaGroup g = cta_group(blockIdx.x, gridDim.x);
        if (arrive_last_in_group(a.workspace, g) && e < L) scan_group(counts, group_sums, L, g);
        grid_barrier(a.workspace, gridDim.x);
        if (e >= L) return;
        int32_t sums[kMaxCtaGroups];
#pragma unroll
        for (int i = 0; i < kMaxCtaGroups; ++i)  // independent loads, in flight together
            sums[i] = i < g.count ? __ldcg(group_sums + i * L + e) : 0;
        const int32_t in_group = __ldcg(counts + blockIdx.x * L + e);
        int32_t all = 0, before = 0;
#pragma unroll
        for (int i = 0; i < kMaxCtaGroups; ++i) {
            all += sums[i];
            before += i < g.index ? sums[i] : 0;
        }
        *total = all;
        *earlier = before + in_group;
    });
}
