// One token ranked by the whole CTA in the flavoured kernels, for rows of
// more than 128 experts (8 or 16 slots per lane). Their per-expert steps,
// a sigmoid with its division, a correction bias, the group scores, cost
// warp 0 many times a plain row's when it takes them over all its slots;
// here thread t holds expert t's key and takes them once. The ranking
// that follows is one_token_select.cuh's (gather_cta_candidates,
// rank_gathered), over keys rather than logits.
#ifndef ALPHAMOE_KERNELS_ONE_TOKEN_SELECT_FLAVOURED_CUH
#define ALPHAMOE_KERNELS_ONE_TOKEN_SELECT_FLAVOURED_CUH

#include "common/few_token_plan.cuh"
#include "common/one_token_select.cuh"
#include "common/route_cta.cuh"

namespace alphamoe {

// The rank scratch of the warps past the ranking's three (below) holds
// each expert's sigmoid where a correction bias makes the keys scores:
// warp 0 takes the chosen experts' weights from there rather than reading
// their logits again and taking their sigmoids once more after the
// ranking. Past the cluster's published counts too (small.cu), which the
// grid CTA writes once warp 0 is done.
constexpr int kStashedScoresScratch = 4;
static_assert((kWarpsPerBlock - kStashedScoresScratch) * sizeof(RankScratch) >= kMaxExperts * sizeof(float) &&
                  kStashedScoresScratch * sizeof(RankScratch) >= kMaxExperts * sizeof(uint16_t),
              "every expert's score fits the scratch past the published counts");

// Expert e's ranking key from its logit x: x itself, or with a correction
// bias fl(score(x) + bias), as flavour_keys, the score kept in *score
// where score is given.
__device__ __forceinline__ uint32_t flavour_key(const RouteArgs &a, float x, float bias, float *score) {
    if (!(a.flags & kFlagCorrectionBias)) return ordered_key(x);
    const float s = expert_score(x);
    if (score) *score = s;
    return ordered_key(alphamoe_biased_score(s, bias));
}

// Every thread of the CTA calls it, for token t: token 0 of a one-token
// plan, or (kGridToken) the one token of a grid CTA, whose ids warp 0
// tallies as token bits (kTallyBits) for the grid's plan, and which
// writes none of the one-token plan.
// Taken where the weights read no row (not the softmax without
// renormalization) and any groups are of 32 experts, a warp each
// (DeepSeek-V3's 8 of 256): each warp scores its group, and every warp
// ranks the groups' scores as keep_best_groups does. The bound is over 32
// maxima (shared_nth_largest_bound), each of S consecutive experts: a
// kept group of 32 holds 32 / S of them, where whole warps' maxima would
// give only as many as the groups kept, often fewer than k. The candidates
// that reach it are gathered in warp 0's scratch in id order, warp 0 ranks
// them and writes the token and its block starts, and the other warps
// write the plan's padding. Where warp_rank_keys would take its general
// rounds (more than 32 candidates, or fewer than k maxima above "no
// candidate"), it returns false in every thread, having written nothing:
// the caller then selects the token as for any other call, with the same
// results.
// The fewest slots per lane for which the CTA ranks a flavoured token: 32
// maxima of S experts, one expert a thread. The one_token and token_ctas
// entry points (kernels/variants.def) exist at these widths only.
constexpr int kFlavouredCtaRankMinSlots = 8;

template <int S, bool kShared, bool kGridToken = false>
__device__ __forceinline__ bool select_one_token_by_cta_flavoured(const RouteArgs &a, CtaShared &sh, int32_t t = 0) {
    static_assert(S >= kFlavouredCtaRankMinSlots && S <= 16 && kWarpsPerBlock == 16,
                  "32 maxima of S experts, one expert a thread");
    const bool grouped = a.num_groups > 1;
    if (((a.flags & kFlagNoRenormalize) && !(kSqrtSoftplusScores || (a.flags & kFlagSigmoid))) ||
        (grouped && a.num_experts != a.num_groups * 32))
        return false;
    const int expert = threadIdx.x;
    const int lane = expert & 31;
    const int warp = expert >> 5;
    const RankedExperts r = ranked_experts<kShared>(a);
    const bool candidate = expert < r.n_candidates;
    // The token bits warp 0 sets below: the CTA's barriers order this
    // before them.
    if (kGridToken) clear_token_masks(sh);
    const char *row = token_row<true>(a, t);
    const float logit = candidate ? load_logit<true>(a, row, expert) : 0.0f;
    const float bias = candidate && (a.flags & kFlagCorrectionBias) ? __ldg(a.correction_bias + expert) : 0.0f;
    const float shared_logit = kShared && warp == 0 ? load_logit<true>(a, row, r.shared_id) : 0.0f;
    // Warps 1 and 2 rank nothing here: their scratch holds the maxima, the
    // warps' candidate counts and the group scores.
    uint32_t *maxima = sh.rank_scratch[1].gathered.value;
    uint32_t *warp_candidates = sh.rank_scratch[1].gathered.id;
    uint32_t *group_scores = sh.rank_scratch[2].gathered.value;
    RankScratch &scratch = sh.rank_scratch[0];

    float *scores = reinterpret_cast<float *>(&sh.rank_scratch[kStashedScoresScratch]);
    // (With a shared expert, which a correction bias never comes with, the
    // weights read the logits.)
    uint32_t key = candidate ? flavour_key(a, logit, bias, kShared ? nullptr : scores + expert) : kNoCandidateKey;
    if (grouped) {  // no shared expert with groups: warp g holds group g
        const uint32_t score = group_score(key, kNoCandidateKey, (a.flags & kFlagCorrectionBias) != 0, lane);
        if (lane == 0) group_scores[warp] = score;
        __syncthreads();
        const int groups = a.num_groups;
        const uint32_t kept =
            best_groups(lane < groups ? group_scores[lane] : kNoCandidateKey, groups, a.topk_groups, lane);
        if (!((kept >> warp) & 1u)) key = kNoCandidateKey;
    }
    uint32_t most = key;
#pragma unroll
    for (int offset = S / 2; offset > 0; offset >>= 1) most = max(most, __shfl_xor_sync(kFullMask, most, offset));
    if (lane % S == 0) maxima[expert / S] = bound_candidate<32>(most, expert / S);
    __syncthreads();
    // Warps past the experts (S of them hold the row) compare nothing.
    const uint32_t bound = warp < S ? shared_nth_largest_bound<32>(maxima, r.n_select, lane) : ~0u;
    const bool reaches = key >= bound;
    const CtaGather g = gather_cta_candidates(reaches, warp_candidates);
    const int32_t gathered = g.count;
    // The same in every thread. Fewer than k maxima above "no candidate"
    // make the bound key 0, which every thread of the S holding warps
    // reaches (at least 256), so this one test covers that case too.
    if (gathered > 32) return false;
    if (reaches) {
        scratch.gathered.value[g.at] = key;
        scratch.gathered.id[g.at] = static_cast<uint32_t>(expert);
    }
    if (warp == 0 && lane >= gathered) scratch.gathered.value[lane] = kNoCandidateKey;  // padding
    __syncthreads();
    if (warp != 0) {
        if (!kGridToken) write_one_token_padding(a, expert - 32, kBlockThreads - 32);
        return true;
    }
    int32_t id = 0, own_id;
    uint32_t chosen_key = kNoCandidateKey, first_key;
    const int rank = rank_gathered<uint32_t, /*kCountInSteps=*/true>(scratch, gathered, r.n_select, lane, own_id, id,
                                                                  chosen_key, first_key);
    // In id order, as one_token_select.cuh places them.
    const bool chosen = lane < gathered && rank < r.n_select;
    const int32_t block = kGridToken ? 0 : __popc(__ballot_sync(kFullMask, chosen) & ((1u << lane) - 1u));
    // The weights this ranking serves read no row slice.
    const RowSlice<S> unread = {};
    write_token<S, kShared, true, false, !kShared>(a, sh, t, 0, unread, shared_logit, id, key_value(chosen_key),
                                                   key_value(first_key), kGridToken ? kTallyBits : kTallyNone,
                                                   reinterpret_cast<float *>(scratch.gathered.value), scores);
    if (kGridToken) return true;
    // After the token, as in one_token_select.cuh.
    if (chosen) write_one_token_block(a, block, own_id, rank);
    if (kShared && lane == r.n_select) write_one_token_block(a, r.n_select, r.shared_id, r.n_select);
    return true;
}

}  // namespace alphamoe

#endif
