// The plan of a one-token call in one CTA, plain kernels. Its k pairs have
// k distinct experts, all plan experts, so each group is one pair padded to
// one block: an expert's group starts at block_m times the number of
// chosen ids below it. The plan follows from the k ids alone, without the
// general plan's per-warp counts, scans and per-expert runs, whose code,
// run once per call and fetched cold, costs a one-token call most of its
// time after selection.
#ifndef ALPHAMOE_KERNELS_ONE_TOKEN_PLAN_CUH
#define ALPHAMOE_KERNELS_ONE_TOKEN_PLAN_CUH

#include "common/route_cta.cuh"

namespace alphamoe {

// Every thread of the CTA calls it once warp 0 has selected token 0.
__device__ __forceinline__ void write_one_token_plan(const RouteArgs &a, CtaShared &sh) {
    const int k = a.top_k;
    const int32_t bm = a.block_m;
    const int32_t live_length = k * bm;
    const int32_t sentinel = k;  // M * k
    const int e = threadIdx.x;
    // The token's ids in lane (pair) order, from phase 1; then, by rank, the
    // lane holding each.
    const int16_t *ids = sh.pair_ids[0];
    int32_t *lane_of_rank = sh.scan_scratch;
    static_assert(kWarpsPerBlock >= 16, "a rank per chosen expert, k <= 16");
    __syncthreads();
    int32_t below = 0, lane = -1;
#pragma unroll 1
    for (int l = 0; l < k; ++l) {
        const int32_t id = ids[l];
        below += id < e ? 1 : 0;
        lane = id == e ? l : lane;
    }
    if (e < a.plan_experts) {
        if (lane >= 0) {
            lane_of_rank[below] = lane;
            a.expert_ids[below] = e;
            if (a.pair_to_sorted) a.pair_to_sorted[lane] = below * bm;
        }
        if (a.expert_counts) a.expert_counts[e] = lane >= 0 ? 1 : 0;
        if (a.expert_offsets) a.expert_offsets[e] = below * bm;
    }
    if (e == 0) {
        *a.num_tokens_post_padded = live_length;
        if (a.expert_offsets) a.expert_offsets[a.plan_experts] = live_length;
    }
    __syncthreads();
    // Each group: its pair, then block_m - 1 sentinels.
#pragma unroll 1
    for (int32_t pos = e; pos < live_length; pos += kBlockThreads) {
        const int32_t rank = block_m_divide(a, pos);
        a.sorted_token_ids[pos] = pos == rank * bm ? lane_of_rank[rank] : sentinel;
    }
    if (a.flags & kFlagTailFill) fill_tail(a, live_length, k, e, kBlockThreads);
}

}  // namespace alphamoe

#endif
