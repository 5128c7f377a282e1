// One token ranked by the whole CTA: the plain kernels' tiny path with more
// than 128 candidates (8 or 16 slots per lane). Warp 0 alone would hold S
// logits per lane and take each step of warp_rank_row over all S; here
// thread t holds expert t, and the CTA's warps share those steps, at the
// price of three CTA barriers.
#ifndef ALPHAMOE_KERNELS_ONE_TOKEN_SELECT_CUH
#define ALPHAMOE_KERNELS_ONE_TOKEN_SELECT_CUH

#include "common/few_token_plan.cuh"
#include "common/route_cta.cuh"

namespace alphamoe {

// Where the CTA's threads hold one candidate each, a thread's place among
// the candidates that reach a bound, in thread order, and their count.
struct CtaGather {
    int32_t at;     // where this thread's candidate goes, if it reaches
    int32_t count;  // candidates that reach, the same in every thread
};

// Every thread of the CTA; warp_candidates: kWarpsPerBlock words of scratch.
__device__ __forceinline__ CtaGather gather_cta_candidates(bool reaches, uint32_t *warp_candidates) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const uint32_t reaching = __ballot_sync(kFullMask, reaches);
    if (lane == 0) warp_candidates[warp] = __popc(reaching);
    __syncthreads();
    const uint32_t count = lane < kWarpsPerBlock ? warp_candidates[lane] : 0u;
    CtaGather g;
    g.at = static_cast<int32_t>(__reduce_add_sync(kFullMask, lane < warp ? count : 0u)) +
           __popc(reaching & ((1u << lane) - 1u));
    g.count = static_cast<int32_t>(__reduce_add_sync(kFullMask, count));
    return g;
}

// The fewest slots per lane for which the CTA ranks one token. The bound
// is over 16 groups of 2 S experts: with 16 slots each group is a warp,
// with 8 half a warp (the upper 8 warps then hold no expert).
constexpr int kCtaRankMinSlots = 8;

// Every thread of the CTA calls it, for token 0 of a one-token plan. The
// bound on the chosen keys is warp_rank_row's, with the groups' maxima as
// its 16 values. The candidates that reach it are gathered in warp 0's
// scratch, in id order, and warp 0 ranks them (rank_gathered) and writes
// the token and its block starts, while the other warps write the plan's
// padding. Where warp_rank_row would take its general rounds (more than 32
// candidates, or a bound at or below -inf), it returns false in every
// thread, having written nothing: the caller then selects the token as for
// any other call, with the same results.
// kHalfLogits: bf16 or fp16 logits, widened where they are loaded (a
// thread's one logit leaves no loads to overlap), and ranked as keys with
// their ids (rank_gathered_wide): 16-bit logits are often equal, and equal
// candidates cost rank_gathered a pass over the list (e512-m1-k10-bm8-bf16).
template <int S, bool kShared, bool kHalfLogits>
__device__ __forceinline__ bool select_one_token_by_cta(const RouteArgs &a, CtaShared &sh) {
    static_assert((S == 8 || S == 16) && kWarpsPerBlock == 16, "16 groups of 2 S experts, a thread each");
    constexpr int kGroupExperts = 2 * S;
    const int expert = threadIdx.x;
    const int lane = expert & 31;
    const int warp = expert >> 5;
    const RankedExperts r = ranked_experts<kShared>(a);
    const int shared_id = r.shared_id, n_candidates = r.n_candidates, n_select = r.n_select;
    const char *row = token_row<kHalfLogits>(a, 0);
    // Past the candidates -inf, as load_row_slice holds there.
    const float logit = expert < n_candidates ? load_logit<kHalfLogits>(a, row, expert) : -INFINITY;
    const float shared_logit = kShared && warp == 0 ? load_logit<kHalfLogits>(a, row, shared_id) : 0.0f;
    // Warp 1 ranks nothing here: its scratch holds the groups' maxima (as
    // the bound compares them) and the warps' candidate counts.
    uint32_t *group_maxima = sh.rank_scratch[1].gathered.value;
    uint32_t *warp_candidates = sh.rank_scratch[1].gathered.id;
    RankScratch &scratch = sh.rank_scratch[0];

    // The key of the group's largest logit that is not NaN (a NaN's key is
    // below every other), as warp_rank_row's maximum by fmaxf.
    const uint32_t key = ordered_key(logit);
    uint32_t group_max;
    if constexpr (kGroupExperts == 32) {
        group_max = __reduce_max_sync(kFullMask, key);
    } else {
        const uint32_t low = __reduce_max_sync(kFullMask, lane < 16 ? key : kNoCandidateKey);
        const uint32_t high = __reduce_max_sync(kFullMask, lane < 16 ? kNoCandidateKey : key);
        group_max = lane < 16 ? low : high;
    }
    // A group is warp w, or with 8 slots half of warp w < 8 (experts end at
    // 255).
    const int group = kGroupExperts == 32 ? warp : 2 * warp + (lane >> 4);
    const bool group_first = kGroupExperts == 32 ? lane == 0 : (lane & 15) == 0 && warp < 8;
    if (group_first) group_maxima[group] = bound_candidate<16>(group_max, group);
    __syncthreads();
    const uint32_t bound = shared_nth_largest_bound<16>(group_maxima, n_select, lane);
    const float threshold = key_value(bound);
    const bool reaches = logit >= threshold;  // never for NaN
    const CtaGather g = gather_cta_candidates(reaches, warp_candidates);
    const int32_t gathered = g.count;
    // The same in every thread; warp 1's scratch is not read again.
    if (bound <= ordered_key(-INFINITY) || gathered > 32) return false;
    if (reaches) {
        const int32_t at = g.at;
        if (kHalfLogits) {
            scratch.chosen[at] = rank_value(ordered_key(logit), expert);
        } else {
            scratch.gathered.value[at] = __float_as_uint(logit);
            scratch.gathered.id[at] = static_cast<uint32_t>(expert);
        }
    }
    if (warp == 0 && lane >= gathered) {  // the rankings' padding
        if (kHalfLogits)
            scratch.chosen[lane] = 0u;
        else
            scratch.gathered.value[lane] = __float_as_uint(-INFINITY);
    }
    __syncthreads();
    if (warp != 0) {
        write_one_token_padding(a, expert - 32, kBlockThreads - 32);
        return true;
    }
    int32_t id = 0, own_id;
    float chosen_logit = 0.0f, largest;
    int rank;
    if constexpr (kHalfLogits) {
        const uint64_t mine = lane < gathered ? scratch.chosen[lane] : 0u;
        own_id = rank_id(static_cast<uint32_t>(mine));
        uint32_t chosen_key = kNoCandidateKey, first_key;
        rank = rank_gathered_wide<8>(scratch, mine, gathered, n_select, lane, id, chosen_key, first_key);
        if (lane < n_select) chosen_logit = key_value(chosen_key);
        largest = key_value(first_key);
    } else {
        rank = rank_gathered<float>(scratch, gathered, n_select, lane, own_id, id, chosen_logit, largest);
    }
    // The candidates lie in id order, so a chosen one's block (the rank of
    // its id among the token's) is the number of chosen ones before it; the
    // shared expert, the largest id, takes the last block.
    const bool chosen = lane < gathered && rank < n_select;
    const int32_t block = __popc(__ballot_sync(kFullMask, chosen) & ((1u << lane) - 1u));
    // No warp counts: the block starts below place the pairs (pair_ids
    // serve the optional expert table). The plain softmax reads no row
    // slice.
    const RowSlice<S> unread = {};
    // The weights' sum through the scratch, free again once ranked.
    write_token<S, kShared, false>(a, sh, 0, 0, unread, shared_logit, id, chosen_logit, largest,
                                   kTallyNone, reinterpret_cast<float *>(scratch.gathered.value));
    // The block starts after the token's weights: stores under a branch
    // before them would hold the weights' steps behind the vote the stores
    // wait for.
    if (chosen) write_one_token_block(a, block, own_id, rank);
    if (kShared && lane == n_select) write_one_token_block(a, n_select, shared_id, n_select);
    return true;
}

}  // namespace alphamoe

#endif
