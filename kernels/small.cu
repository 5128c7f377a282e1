// small: one thread-block cluster (at most kMaxClusterCtas CTAs, all on one
// GPC), one slice of tokens per CTA. The CTAs trade their expert counts
// through distributed shared memory across one cluster barrier, which the
// hardware completes inside the GPC: no workspace traffic and no grid
// barrier through L2. Every CTA then sums the counts itself.
#include "common/kernel_name.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

extern "C" __global__ void __launch_bounds__(kBlockThreads, 1)
    ALPHAMOE_KERNEL_NAME(small)(const RouteArgs a) {
    __shared__ CtaShared sh;
    bool exchanged = false;
    route_kernel_body<kSharedExpert, kFlavoured>(a, sh, [&](int32_t count, int32_t *total, int32_t *earlier) {
        const int e = threadIdx.x;
        const unsigned cta = blockIdx.x;  // the CTA's rank in the cluster: the grid is one cluster
        if (e < a.plan_experts) sh.published_counts[e] = count;
        // Release this CTA's counts to the cluster, acquire everyone's.
        __cluster_barrier_arrive();
        __cluster_barrier_wait();
        if (e < a.plan_experts) {
            int32_t values[kMaxClusterCtas];
#pragma unroll
            for (int c = 0; c < kMaxClusterCtas; ++c)  // independent loads, in flight together
                values[c] = c < static_cast<int>(gridDim.x)
                                ? *static_cast<const int32_t *>(__cluster_map_shared_rank(&sh.published_counts[e], c))
                                : 0;
#pragma unroll
            for (int c = 0; c < kMaxClusterCtas; ++c) {
                *total += values[c];
                *earlier += c < static_cast<int>(cta) ? values[c] : 0;
            }
        }
        // A CTA's shared memory must outlive the other CTAs' reads of it:
        // every CTA arrives once its reads are done (release orders them
        // first) and waits for the others just before it exits.
        __cluster_barrier_arrive();
        exchanged = true;
    });
    if (exchanged) __cluster_barrier_wait();
}
