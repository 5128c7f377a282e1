// One token ranked by the whole CTA: the plain kernels' tiny path with more
// than 256 candidates (16 slots per lane). Warp 0 alone would load 16
// logits per lane and find their maximum before the bound; here each
// thread loads one expert's logit, each warp finds the maximum of its 32,
// and after one CTA barrier warp 0 has the bound's 16 maxima and the row,
// from shared memory. The other warps then write the plan's padding.
// (Sharing the candidates' counting and gathering among the warps too
// took two more barriers, slower: bench/RESULTS.md.)
#ifndef ALPHAMOE_KERNELS_ONE_TOKEN_SELECT_CUH
#define ALPHAMOE_KERNELS_ONE_TOKEN_SELECT_CUH

#include "common/few_token_plan.cuh"
#include "common/route_cta.cuh"

namespace alphamoe {

// The fewest slots per lane for which the CTA ranks one token: with 16,
// each of the bound's 16 groups of 32 experts is a warp. With 8 slots, 16
// groups of 16 (two per warp) measured slower than warp 0 alone
// (bench/RESULTS.md).
constexpr int kCtaRankMinSlots = 16;

// Word of one_token_row that holds the expert's logit.
__device__ __forceinline__ int one_token_row_word(int expert) {
    return (expert >> 4) * kOneTokenRowLaneWords + (expert & 15);
}

// Every thread of the CTA calls it, for token 0 of a one-token plan. The
// bound on the chosen keys is warp_rank_row's, with the warps' maxima as
// its 16 groups of 32 experts. Warp 0 gathers the candidates that reach
// it, in id order, ranks them (rank_gathered) and writes the token and its
// block starts; the other warps write the plan's padding and return true.
// Where warp_rank_row would take its general rounds (more than 32
// candidates, or a bound at or below -inf), warp 0 returns false, having
// written nothing: the caller then has it select the token as for any
// other call, with the same results, and the same padding.
template <int S, bool kShared>
__device__ __forceinline__ bool select_one_token_by_cta(const RouteArgs &a, CtaShared &sh) {
    static_assert(S >= kCtaRankMinSlots && kWarpsPerBlock == 16, "a warp's maximum per group of 32 experts");
    static_assert(kOneTokenRowWords >= kBlockThreads / 16 * kOneTokenRowLaneWords, "a word for every thread");
    const int expert = threadIdx.x;
    const int lane = expert & 31;
    const int warp = expert >> 5;
    const RankedExperts r = ranked_experts<kShared>(a);
    const int shared_id = r.shared_id, n_candidates = r.n_candidates, n_select = r.n_select;
    const float *row = reinterpret_cast<const float *>(token_row<false>(a, 0));
    // Past the candidates -inf, as load_row_slice holds there.
    const float logit = expert < n_candidates ? __ldg(row + expert) : -INFINITY;
    const float shared_logit = kShared && warp == 0 ? __ldg(row + shared_id) : 0.0f;
    // Warp 1 ranks nothing here: its scratch holds the warps' maxima.
    uint32_t *warp_maxima = sh.rank_scratch[1].gathered.value;
    RankScratch &scratch = sh.rank_scratch[0];

    // The key of the warp's largest logit that is not NaN (a NaN's key is
    // below every other), as warp_rank_row's maximum by fmaxf.
    sh.one_token_row[one_token_row_word(expert)] = logit;
    const uint32_t warp_max = __reduce_max_sync(kFullMask, ordered_key(logit));
    if (lane == 0) warp_maxima[warp] = warp_max;
    __syncthreads();
    if (warp != 0) {
        write_one_token_padding(a, expert - 32, kBlockThreads - 32);
        return true;
    }
    const uint32_t bound = warp_nth_largest_bound<16>(warp_maxima[lane & 15], n_select, lane);
    float value[16];
    const float4 *run = reinterpret_cast<const float4 *>(sh.one_token_row + lane * kOneTokenRowLaneWords);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const float4 v = run[q];
        value[4 * q] = v.x;
        value[4 * q + 1] = v.y;
        value[4 * q + 2] = v.z;
        value[4 * q + 3] = v.w;
    }
    const float threshold = key_value(bound);
    const ReachingCounts reaching = count_reaching<16>(value, threshold, lane);
    // The same in every lane of warp 0.
    if (bound <= ordered_key(-INFINITY) || reaching.gathered > 32) return false;
    gather_reaching<16, /*kSlotIdStep=*/1, /*kLaneIdStep=*/16>(value, threshold, reaching, lane, scratch);
    const int gathered = reaching.gathered;
    int32_t id = 0, own_id;
    float chosen_logit = 0.0f, largest;
    const int rank = rank_gathered<float>(scratch, gathered, n_select, lane, own_id, id, chosen_logit, largest);
    // The candidates lie in id order, so a chosen one's block (the rank of
    // its id among the token's) is the number of chosen ones before it; the
    // shared expert, the largest id, takes the last block.
    const bool chosen = lane < gathered && rank < n_select;
    const int32_t block = __popc(__ballot_sync(kFullMask, chosen) & ((1u << lane) - 1u));
    // No warp counts: the block starts below place the pairs (pair_ids
    // serve the optional expert table). The plain softmax reads no row
    // slice.
    const RowSlice<S> unread = {};
    write_token<S, kShared, false>(a, sh, 0, 0, unread, shared_logit, id, chosen_logit, largest,
                                   /*count_pairs=*/false);
    // The block starts after the token's weights: stores under a branch
    // before them would hold the weights' steps behind the vote the stores
    // wait for.
    if (chosen) write_one_token_block(a, block, own_id, rank);
    if (kShared && lane == n_select) write_one_token_block(a, n_select, shared_id, n_select);
    return true;
}

}  // namespace alphamoe

#endif
