// small: a co-resident grid, one slice of tokens per CTA, one barrier
// between counting and placing. Up to kMaxClusterCtas CTAs (kMaxTokenCtas
// in the token-CTA entry points) the grid is one thread-block cluster (all
// on one GPC): the CTAs trade their expert counts through distributed
// shared memory across a cluster barrier, which the hardware completes
// inside the GPC, with no workspace traffic. A larger
// grid is launched cooperatively and meets at a grid barrier, the counts
// going through the workspace. Either way every CTA then sums the counts
// itself: redundant, but cheaper than a second barrier while the grid is
// small.
#include "common/entry_point.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

namespace {

// Arrives at the cluster barrier, releasing this CTA's shared memory writes
// to the cluster. A plain (release) arrive releases global memory writes
// too: a fence at GPU scope that waits until the outputs the CTA has stored
// so far have landed, on the path of every cluster call (e512-m32-k8-bm16,
// e512-m128-k8-bm16). The fence restricted to shared memory needs PTX ISA
// 8.6 (CUDA 12.8).
__device__ __forceinline__ void arrive_releasing_shared_memory() {
#if __CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8)
    asm volatile("fence.release.sync_restrict::shared::cta.cluster;" ::: "memory");
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#else
    __cluster_barrier_arrive();
#endif
}

// Thread e < E: the count of expert e summed over the cluster's CTAs (at
// most kClusterCtas), and over those before this one. Each CTA reads its
// peers' counts: pushing them into every CTA's shared memory by st.async,
// completing on an mbarrier with no fence, was slower (e512-m128-k8-bm16,
// e128-m64-k8-bm64).
template <int kClusterCtas>
__device__ __forceinline__ void exchange_in_cluster(const RouteArgs &a, CtaShared &sh, int32_t count,
                                                    int32_t *total, int32_t *earlier) {
    const int e = threadIdx.x;
    const int cta = blockIdx.x;  // the CTA's rank in the cluster: the grid is one cluster
    if (e < a.plan_experts) sh.published_counts[e] = static_cast<uint16_t>(count);
    // Release this CTA's counts to the cluster, acquire everyone's.
    arrive_releasing_shared_memory();
    __cluster_barrier_wait();
    if (e < a.plan_experts) {
        int32_t values[kClusterCtas];
#pragma unroll
        for (int c = 0; c < kClusterCtas; ++c)  // independent loads, in flight together
            values[c] = c < static_cast<int>(gridDim.x)
                            ? *static_cast<const uint16_t *>(__cluster_map_shared_rank(&sh.published_counts[e], c))
                            : 0;
#pragma unroll
        for (int c = 0; c < kClusterCtas; ++c) {
            *total += values[c];
            *earlier += c < cta ? values[c] : 0;
        }
    }
    // A CTA's shared memory must outlive the other CTAs' reads of it: each
    // arrives once its reads are done and waits for the others just before
    // it exits. The sums are the arrive's operands, so it comes after every
    // remote read has returned, and it needs no release fence, which the
    // release arrive would wait for (e512-m32-k8-bm16, e512-m128-k8-bm16).
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::"r"(*total), "r"(*earlier) : "memory");
}

__device__ __forceinline__ void exchange_through_workspace(const RouteArgs &a, int32_t count, int32_t *total,
                                                           int32_t *earlier) {
    const int32_t *counts = publish_counts_and_wait(a, count);
    const int e = threadIdx.x;
    const int cta = blockIdx.x;
    const int num_ctas = gridDim.x;
    const int L = a.plan_experts;
    if (e >= L) return;
    // Word e of every CTA's row: a warp reads 32 consecutive words of a
    // row at a time, and 16 rows' loads are in flight together.
    constexpr int kBatch = 16;
    for (int first = 0; first < num_ctas; first += kBatch) {
        int32_t values[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; ++i)
            values[i] = first + i < num_ctas ? __ldcg(counts + (first + i) * L + e) : 0;
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
            *total += values[i];
            *earlier += first + i < cta ? values[i] : 0;
        }
    }
}

// A cluster or a cooperative grid: token bits in the flavoured kernel too
// (its calls are of at most 16 tokens a CTA but where a grid is forced
// small), and the block scan by ballots where every expert holds few blocks.
struct SmallGrid {
    static constexpr bool kOneCta = false;
    static constexpr bool kFlavouredTokenBits = true;
    static constexpr bool kFewBlocksScan = true;
};

template <class Variant, int kSlots>
__device__ __forceinline__ void small(const RouteArgs &a) {
    constexpr bool kTokenCtas = Variant::kCtaRanksToken;
    __shared__ CtaShared sh;
    // Uniform over the grid: launched as one cluster, or cooperatively.
    const bool one_cluster = __clusterSizeInBlocks() == gridDim.x;
    // It stages no pairs (stage): the cluster's published counts share the
    // list's space.
    route_kernel_body<EntryPolicy<SmallGrid, Variant, kSlots>>(
        a, sh, [&](int32_t count, int32_t *total, int32_t *earlier, auto /*stage*/) {
            // A token-CTA cluster beyond the portable size reads the
            // counts of up to kMaxTokenCtas CTAs; one within it, of
            // kMaxClusterCtas, whose shorter code is faster cold
            // (e256-m8-k8-bm64-deepseek-v3 with cold code).
            if (one_cluster && kTokenCtas && gridDim.x > kMaxClusterCtas)
                exchange_in_cluster<kMaxTokenCtas>(a, sh, count, total, earlier);
            else if (one_cluster)
                exchange_in_cluster<kMaxClusterCtas>(a, sh, count, total, earlier);
            else
                exchange_through_workspace(a, count, total, earlier);
        });
    // Only a call that exchanged counts arrived at the second cluster barrier
    // (an empty call returns before; that too is uniform).
    if (one_cluster && a.num_tokens != 0) __cluster_barrier_wait();
}

}  // namespace
