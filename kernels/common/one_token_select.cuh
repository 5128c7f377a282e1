// One token ranked by the whole CTA: the plain kernels' tiny path with more
// than 256 candidates (16 slots per lane). Warp 0 alone would hold 16
// logits per lane and take each step of warp_rank_row over all 16; here
// warp w holds experts 32w .. 32w + 31, one per lane, and the CTA's 16
// warps share those steps, at the price of three CTA barriers.
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

// The same for the flavoured kernels, whose per-expert steps (a sigmoid
// with a division, a bias, group scores) cost warp 0 many times a plain
// row's: from 8 slots (more than 128 experts) the CTA shares them.
constexpr int kCtaRankMinFlavouredSlots = 8;

// The steps both CTA rankings share. Thread t holds expert t; `reaches`
// says whether its expert reaches the bound.

// Counts the candidates over the CTA: returns how many there are (the same
// in every thread), and in `before` how many the warps before this one
// hold. warp_candidates: kWarpsPerBlock words no other thread uses.
__device__ __forceinline__ int32_t count_cta_candidates(bool reaches, uint32_t *warp_candidates,
                                                        uint32_t &reaching, int32_t &before) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    reaching = __ballot_sync(kFullMask, reaches);
    if (lane == 0) warp_candidates[warp] = __popc(reaching);
    __syncthreads();
    const uint32_t count = lane < kWarpsPerBlock ? warp_candidates[lane] : 0u;
    before = static_cast<int32_t>(__reduce_add_sync(kFullMask, lane < warp ? count : 0u));
    return static_cast<int32_t>(__reduce_add_sync(kFullMask, count));
}

// Gathers the candidates into warp 0's scratch in id order, as bits of the
// values rank_gathered ranks, and pads the list with `padding`, a value
// below every candidate's.
__device__ __forceinline__ void gather_cta_candidates(RankScratch &scratch, bool reaches, uint32_t reaching,
                                                      int32_t before, int32_t gathered, uint32_t bits,
                                                      uint32_t padding) {
    const int expert = threadIdx.x;
    const int lane = expert & 31;
    const int warp = expert >> 5;
    if (reaches) {
        const int32_t at = before + __popc(reaching & ((1u << lane) - 1u));
        scratch.gathered.value[at] = bits;
        scratch.gathered.id[at] = static_cast<uint32_t>(expert);
    }
    if (warp == 0 && lane >= gathered) scratch.gathered.value[lane] = padding;
    __syncthreads();
}

// What write_token takes of a ranked value: a logit as it is, a key as
// the value it came from.
__device__ __forceinline__ float ranked_value_as_float(float logit) { return logit; }
__device__ __forceinline__ float ranked_value_as_float(uint32_t key) { return key_value(key); }

// Once the candidates are gathered: warp 0 ranks them (rank_gathered, as
// values of type T) and writes the token and its block starts, while the
// other warps write the plan's padding.
template <int S, bool kShared, bool kFlavoured, typename T>
__device__ __forceinline__ void write_cta_ranked_token(const RouteArgs &a, CtaShared &sh, RankScratch &scratch,
                                                       int32_t gathered, float shared_logit) {
    const int expert = threadIdx.x;
    const int lane = expert & 31;
    const int warp = expert >> 5;
    if (warp != 0) {
        write_one_token_padding(a, expert - 32, kBlockThreads - 32);
        return;
    }
    const RankedExperts r = ranked_experts<kShared>(a);
    int32_t id = 0, own_id;
    T chosen_value = value_from_bits<T>(kNoCandidateKey), largest;
    const int rank =
        rank_gathered<T>(scratch, gathered, r.n_select, lane, own_id, id, chosen_value, largest);
    // The candidates lie in id order, so a chosen one's block (the rank of
    // its id among the token's) is the number of chosen ones before it; the
    // shared expert, the largest id, takes the last block.
    const bool chosen = lane < gathered && rank < r.n_select;
    const uint32_t chosen_lanes = __ballot_sync(kFullMask, chosen);
    if (chosen) write_one_token_block(a, __popc(chosen_lanes & ((1u << lane) - 1u)), own_id, rank);
    if (kShared && lane == r.n_select) write_one_token_block(a, r.n_select, r.shared_id, r.n_select);
    // No warp counts: the block starts above place the pairs (pair_ids
    // serve the optional expert table). Neither the plain softmax nor the
    // flavours this ranking takes read a row slice.
    const RowSlice<S> unread = {};
    write_token<S, kShared, kFlavoured>(a, sh, 0, 0, unread, shared_logit, id, ranked_value_as_float(chosen_value),
                                        ranked_value_as_float(largest), /*count_pairs=*/false);
}

// Every thread of the CTA calls it, for token 0 of a one-token plan. The
// bound on the chosen keys is warp_rank_row's, with the warps' maxima as
// its 16 groups of 32 experts. The candidates that reach it are gathered
// in warp 0's scratch, in id order, and warp 0 ranks them (rank_gathered)
// and writes the token and its block starts, while the other warps write
// the plan's padding. Where warp_rank_row would take its general rounds
// (more than 32 candidates, or a bound at or below -inf), it returns false
// in every thread, having written nothing: the caller then selects the
// token as for any other call, with the same results.
template <int S, bool kShared>
__device__ __forceinline__ bool select_one_token_by_cta(const RouteArgs &a, CtaShared &sh) {
    static_assert(S >= kCtaRankMinSlots && kWarpsPerBlock == 16, "a warp's maximum per group of 32 experts");
    const int expert = threadIdx.x;
    const int lane = expert & 31;
    const int warp = expert >> 5;
    const RankedExperts r = ranked_experts<kShared>(a);
    const float *row = reinterpret_cast<const float *>(token_row<false>(a, 0));
    // Past the candidates -inf, as load_row_slice holds there.
    const float logit = expert < r.n_candidates ? __ldg(row + expert) : -INFINITY;
    const float shared_logit = kShared && warp == 0 ? __ldg(row + r.shared_id) : 0.0f;
    // Warp 1 ranks nothing here: its scratch holds the warps' maxima and
    // their candidate counts.
    uint32_t *warp_maxima = sh.rank_scratch[1].gathered.value;
    uint32_t *warp_candidates = sh.rank_scratch[1].gathered.id;
    RankScratch &scratch = sh.rank_scratch[0];

    // The key of the warp's largest logit that is not NaN (a NaN's key is
    // below every other), as warp_rank_row's maximum by fmaxf.
    const uint32_t key = ordered_key(logit);
    const uint32_t warp_max = __reduce_max_sync(kFullMask, key);
    if (lane == 0) warp_maxima[warp] = warp_max;
    __syncthreads();
    const uint32_t bound = warp_nth_largest_bound<16>(warp_maxima[lane & 15], r.n_select, lane);
    const float threshold = key_value(bound);
    const bool reaches = logit >= threshold;  // never for NaN
    uint32_t reaching;
    int32_t before;
    const int32_t gathered = count_cta_candidates(reaches, warp_candidates, reaching, before);
    // The same in every thread; warp 1's scratch is not read again.
    if (bound <= ordered_key(-INFINITY) || gathered > 32) return false;
    gather_cta_candidates(scratch, reaches, reaching, before, gathered, __float_as_uint(logit),
                          __float_as_uint(-INFINITY));
    write_cta_ranked_token<S, kShared, false, float>(a, sh, scratch, gathered, shared_logit);
    return true;
}

// The flavoured kernels' ranking key of expert e, whose logit is x: x
// itself, or with a correction bias fl(sigmoid(x) + bias), as flavour_keys.
__device__ __forceinline__ uint32_t flavour_key(const RouteArgs &a, float x, float bias) {
    if (!(a.flags & kFlagCorrectionBias)) return ordered_key(x);
    return ordered_key(alphamoe_biased_score(alphamoe_sigmoid(x), bias));
}

// The flavoured kernels' one-token ranking by the CTA, for rows of S >= 8
// slots: thread t holds expert t's key, so every per-expert step runs once
// per thread rather than S times in warp 0. Taken where the weights need
// no row (not the softmax without renormalization) and any groups are of
// 32 experts, a warp each (DeepSeek-V3's 8 of 256): each warp scores its
// group, and every warp ranks the groups' scores as keep_best_groups does.
// The bound is the n-th largest of 32 maxima, each over S consecutive
// experts: kept groups of 32 give at least 32 / S such maxima each, enough
// for a tight bound where whole warps' maxima would give only the kept
// groups' few. Returns false in every thread, having written nothing,
// wherever warp_rank_keys would take its general rounds (more than 32
// candidates, or too few maxima above "no candidate"); the caller then
// selects the token as for any other call, with the same results.
template <int S, bool kShared>
__device__ __forceinline__ bool select_one_token_by_cta_flavoured(const RouteArgs &a, CtaShared &sh) {
    static_assert(S >= kCtaRankMinFlavouredSlots && S <= 16 && kWarpsPerBlock == 16,
                  "32 maxima of S experts, one expert a thread");
    const bool grouped = a.num_groups > 1;
    if (((a.flags & kFlagNoRenormalize) && !(a.flags & kFlagSigmoid)) ||
        (grouped && a.num_experts != a.num_groups * 32))
        return false;
    const int expert = threadIdx.x;
    const int lane = expert & 31;
    const int warp = expert >> 5;
    const RankedExperts r = ranked_experts<kShared>(a);
    const bool candidate = expert < r.n_candidates;
    const char *row = token_row<true>(a, 0);
    const float logit = candidate ? load_logit<true>(a, row, expert) : 0.0f;
    const float bias = candidate && (a.flags & kFlagCorrectionBias) ? __ldg(a.correction_bias + expert) : 0.0f;
    const float shared_logit = kShared && warp == 0 ? load_logit<true>(a, row, r.shared_id) : 0.0f;
    // Warps 1 and 2 rank nothing here: their scratch holds the group
    // scores, the maxima and the warps' candidate counts.
    uint32_t *group_scores = sh.rank_scratch[2].gathered.value;
    uint32_t *maxima = sh.rank_scratch[1].gathered.value;
    uint32_t *warp_candidates = sh.rank_scratch[1].gathered.id;
    RankScratch &scratch = sh.rank_scratch[0];

    uint32_t key = candidate ? flavour_key(a, logit, bias) : kNoCandidateKey;
    if (grouped) {
        // No shared expert with groups: every expert is a candidate, and
        // warp g holds group g.
        const uint32_t score = group_score(key, kNoCandidateKey, (a.flags & kFlagCorrectionBias) != 0, lane);
        if (lane == 0) group_scores[warp] = score;
        __syncthreads();
        const int groups = a.num_groups;
        const uint32_t mine = lane < groups ? group_scores[lane] : kNoCandidateKey;
        int ahead = 0;
#pragma unroll 4
        for (int j = 0; j < groups; ++j) {
            const uint32_t other = __shfl_sync(kFullMask, mine, j);
            ahead += (other > mine || (other == mine && j < lane)) ? 1 : 0;
        }
        const uint32_t kept = __ballot_sync(kFullMask, lane < groups && ahead < a.topk_groups);
        if (!((kept >> warp) & 1u)) key = kNoCandidateKey;
    }
    uint32_t most = key;
#pragma unroll
    for (int offset = S / 2; offset > 0; offset >>= 1) most = max(most, __shfl_xor_sync(kFullMask, most, offset));
    if (lane % S == 0) maxima[expert / S] = most;
    __syncthreads();
    // Only warps holding experts compare keys with the bound.
    uint32_t bound = ~0u;
    if (warp < S) bound = warp_nth_largest_bound<32>(maxima[lane], r.n_select, lane);
    const bool reaches = key >= bound;
    uint32_t reaching;
    int32_t before;
    const int32_t gathered = count_cta_candidates(reaches, warp_candidates, reaching, before);
    // The same in every thread. Fewer than n maxima above "no candidate"
    // give a bound of key 0, which every slot of the S holding warps (at
    // least 256) reaches, so this test covers that case too.
    if (gathered > 32) return false;
    gather_cta_candidates(scratch, reaches, reaching, before, gathered, key, kNoCandidateKey);
    write_cta_ranked_token<S, kShared, true, uint32_t>(a, sh, scratch, gathered, shared_logit);
    return true;
}

}  // namespace alphamoe

#endif
