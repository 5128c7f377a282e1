// The plan of a call of at most one token per warp (M <= 16) in one CTA
// whose every expert is a plan expert (no expert map, no local range). A
// token's k ids are distinct and all plan experts, so an expert has at
// most one pair per token. The general plan's code for any grid, any
// tokens per warp and any padding run, run once per call and fetched
// cold, costs such a call most of its time after selection; these take
// shorter paths.
#ifndef ALPHAMOE_KERNELS_FEW_TOKEN_PLAN_CUH
#define ALPHAMOE_KERNELS_FEW_TOKEN_PLAN_CUH

#include "common/route_cta.cuh"

namespace alphamoe {

// One token: each group is one pair padded to one block, so an expert's
// group starts at block_m times the number of chosen ids below it, and the
// plan follows from the k ids alone. Every thread of the CTA calls it once
// warp 0 has selected token 0.
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

// 2 to 16 tokens, warp w holding token w: an expert's pairs, at most one
// per token warp, take positions in warp order after one scan of the
// padded counts. The padding is written over the whole live length first,
// by every thread and coalesced, and the pairs over it. Every thread of
// the CTA calls it once the warps have selected their tokens.
__device__ __forceinline__ void write_few_token_plan(const RouteArgs &a, CtaShared &sh) {
    const int e = threadIdx.x;
    const int M = a.num_tokens;
    const int k = a.top_k;
    const int E = a.plan_experts;
    const int32_t bm = a.block_m;
    __syncthreads();
    // Each token warp's count of expert e (0 or 1) becomes the count of the
    // warps before it.
    int32_t count = 0;
    if (e < E) {
#pragma unroll 1
        for (int w = 0; w < M; ++w) {
            const int32_t c = sh.warp_counts[w][e];
            sh.warp_counts[w][e] = count;
            count += c;
        }
    }
    const int32_t blocks = count > 0 ? block_m_divide(a, count - 1) + 1 : 0;
    int32_t live_length = 0;
    const int32_t offset = block_exclusive_scan(blocks * bm, sh.scan_scratch, &live_length);
    if (e < E) {
        sh.offset[e] = offset;
        if (a.expert_counts) a.expert_counts[e] = count;
        if (a.expert_offsets) a.expert_offsets[e] = offset;
        const int32_t first_block = block_m_divide(a, offset);
#pragma unroll 1
        for (int32_t b = first_block; b < first_block + blocks; ++b) a.expert_ids[b] = e;
    }
    if (e == 0) {
        *a.num_tokens_post_padded = live_length;
        if (a.expert_offsets) a.expert_offsets[E] = live_length;
    }
    const int32_t sentinel = M * k;
#pragma unroll 1
    for (int32_t pos = e; pos < live_length; pos += kBlockThreads) a.sorted_token_ids[pos] = sentinel;
    __syncthreads();  // the sentinels before the pairs that replace some
    const int warp = e >> 5;
    const int lane = e & 31;
    if (warp < M && lane < k) {
        const int32_t id = sh.pair_ids[warp][lane];
        const int32_t pos = sh.offset[id] + sh.warp_counts[warp][id];
        const int32_t p = warp * k + lane;
        a.sorted_token_ids[pos] = p;
        if (a.pair_to_sorted) a.pair_to_sorted[p] = pos;
    }
    if (a.flags & kFlagTailFill) fill_tail(a, live_length, block_m_divide(a, live_length), e, kBlockThreads);
}

}  // namespace alphamoe

#endif
