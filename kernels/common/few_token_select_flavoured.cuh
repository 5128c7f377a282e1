// One to 16 tokens ranked by the whole CTA in the flavoured kernels, for
// rows of more than 128 experts (8 or 16 slots per lane). Their
// per-expert steps, a sigmoid with its division, a correction bias, the
// group scores, cost a warp many times a plain row's when it takes them
// over all its slots for its one token; here thread t holds expert t's
// keys and takes them once a token. The ranking that follows is
// one_token_select.cuh's, over keys rather than logits, by warp w for
// token w.
#ifndef ALPHAMOE_KERNELS_FEW_TOKEN_SELECT_FLAVOURED_CUH
#define ALPHAMOE_KERNELS_FEW_TOKEN_SELECT_FLAVOURED_CUH

#include "common/few_token_plan.cuh"
#include "common/route_cta.cuh"

namespace alphamoe {

// The fewest slots per lane for which the flavoured kernels' CTA ranks a
// few-token call (more than 128 experts).
constexpr int kCtaRankMinFlavouredSlots = 8;

// The keys of the thread's first `own` tokens, as flavour_keys: every
// exponential of the sigmoids first, then every division, so that the
// tokens' chains overlap. No step runs for a token past them, whose key
// is never read.
template <int N>
__device__ __forceinline__ void flavour_keys_of_tokens(const RouteArgs &a, const float (&logit)[N], float bias,
                                                       bool candidate, int own, uint32_t (&key)[N]) {
    if (!(a.flags & kFlagCorrectionBias)) {
#pragma unroll
        for (int j = 0; j < N && j < own; ++j) key[j] = candidate ? ordered_key(logit[j]) : kNoCandidateKey;
        return;
    }
    float e[N];
#pragma unroll
    for (int j = 0; j < N && j < own; ++j) e[j] = alphamoe_sigmoid_exp(logit[j]);
#pragma unroll
    for (int j = 0; j < N && j < own; ++j)
        key[j] = candidate ? ordered_key(alphamoe_biased_score(alphamoe_sigmoid_finish(logit[j], e[j]), bias))
                           : kNoCandidateKey;
}

// Every thread of the CTA calls it, for a call of 1 to 16 tokens of a
// few-token plan. Thread t holds expert t % (32 S) of the tokens
// t / (32 S), t / (32 S) + 16 / S, ...: a row of 32 S slots is S warps, so
// 16 / S sets of S warps share the tokens. Taken where the weights read no
// row (not the softmax without renormalization) and any groups are of 32
// experts, a warp each (DeepSeek-V3's 8 of 256). Per token: each warp
// scores its group and warp w ranks token w's groups' scores as
// keep_best_groups does; the bound is warp_nth_largest_bound's over 32
// maxima, each of S consecutive experts (a kept group of 32 holds 32 / S
// of them, where whole warps' maxima would give only as many as the groups
// kept, often fewer than k), found by warp w for token w; the candidates
// that reach it are gathered in warp w's scratch in id order. Then warp w
// ranks token w and writes its outputs. Of one token, warp 0 also writes
// its block starts while the other warps write the plan's padding; of
// more, the caller writes the plan (few_token_plan.cuh), whose token masks
// this clears. Where warp_rank_keys would take its general rounds for any
// token (more than 32 candidates, or fewer than k maxima above "no
// candidate"), it returns false in every thread, having written nothing
// to global memory: the caller then selects the tokens as for any other
// call, with the same results.
template <int S, bool kShared>
__device__ __forceinline__ bool select_few_tokens_by_cta_flavoured(const RouteArgs &a, CtaShared &sh) {
    static_assert(S >= kCtaRankMinFlavouredSlots && S <= 16 && kWarpsPerBlock == 16,
                  "32 maxima of S experts, one expert a thread");
    constexpr int kSetThreads = 32 * S;
    constexpr int kSets = kBlockThreads / kSetThreads;
    constexpr int kTokensPerThread = kWarpsPerBlock / kSets;
    const bool grouped = a.num_groups > 1;
    if (((a.flags & kFlagNoRenormalize) && !(a.flags & kFlagSigmoid)) ||
        (grouped && a.num_experts != a.num_groups * 32))
        return false;
    const int M = a.num_tokens;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int expert = threadIdx.x & (kSetThreads - 1);
    const int set = threadIdx.x / kSetThreads;
    const int set_warp = expert >> 5;  // warp g of a set holds group g
    const RankedExperts r = ranked_experts<kShared>(a);
    const bool candidate = expert < r.n_candidates;
    // Token set + kSets j is the thread's j-th, of `own`: its steps run in
    // every lane of a warp or in none.
    const int own = (M - set + kSets - 1) / kSets;
    float logit[kTokensPerThread];
#pragma unroll
    for (int j = 0; j < kTokensPerThread && j < own; ++j)
        logit[j] = candidate ? load_logit<true>(a, token_row<true>(a, set + kSets * j), expert) : 0.0f;
    const float bias = candidate && (a.flags & kFlagCorrectionBias) ? __ldg(a.correction_bias + expert) : 0.0f;
    const float shared_logit = kShared && warp < M ? load_logit<true>(a, token_row<true>(a, warp), r.shared_id) : 0.0f;
    if (M > 1) clear_token_masks(sh);
    // Per-token words in the warps' counts, which the few-token plans do
    // not use: [token][group] scores, [token] kept groups, [token][32]
    // maxima, [token] bounds, [token][warp of the set] candidates.
    uint32_t *words = reinterpret_cast<uint32_t *>(&sh.warp_counts[0][0]);
    uint32_t *group_scores = words;
    uint32_t *kept_groups = words + 256;
    uint32_t *maxima = words + 512;
    uint32_t *bounds = words + 1024;
    uint32_t *candidates = words + 1040;
    static_assert(sizeof(sh.warp_counts) >= 1296 * sizeof(uint32_t), "the per-token words fit");

    uint32_t key[kTokensPerThread];
    flavour_keys_of_tokens(a, logit, bias, candidate, own, key);
    if (grouped) {  // no shared expert with groups
        const bool pair_sum = (a.flags & kFlagCorrectionBias) != 0;
#pragma unroll
        for (int j = 0; j < kTokensPerThread; ++j) {
            const int t = set + kSets * j;
            if (t >= M) break;
            const uint32_t score = group_score(key[j], kNoCandidateKey, pair_sum, lane);
            if (lane == 0) group_scores[t * 16 + set_warp] = score;
        }
        __syncthreads();
        if (warp < M) {
            const int groups = a.num_groups;
            const uint32_t mine = lane < groups ? group_scores[warp * 16 + lane] : kNoCandidateKey;
            int ahead = 0;
#pragma unroll 4
            for (int g = 0; g < groups; ++g) {
                const uint32_t other = __shfl_sync(kFullMask, mine, g);
                ahead += (other > mine || (other == mine && g < lane)) ? 1 : 0;
            }
            const uint32_t kept = __ballot_sync(kFullMask, lane < groups && ahead < a.topk_groups);
            if (lane == 0) kept_groups[warp] = kept;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < kTokensPerThread; ++j) {
            const int t = set + kSets * j;
            if (t >= M) break;
            if (!((kept_groups[t] >> set_warp) & 1u)) key[j] = kNoCandidateKey;
        }
    }
#pragma unroll
    for (int j = 0; j < kTokensPerThread; ++j) {
        const int t = set + kSets * j;
        if (t >= M) break;
        uint32_t most = key[j];
#pragma unroll
        for (int offset = S / 2; offset > 0; offset >>= 1) most = max(most, __shfl_xor_sync(kFullMask, most, offset));
        if (lane % S == 0) maxima[t * 32 + expert / S] = most;
    }
    __syncthreads();
    if (warp < M) {
        const uint32_t bound = warp_nth_largest_bound<32>(maxima[warp * 32 + lane], r.n_select, lane);
        if (lane == 0) bounds[warp] = bound;
    }
    __syncthreads();
    uint32_t reaching[kTokensPerThread];
#pragma unroll
    for (int j = 0; j < kTokensPerThread; ++j) {
        const int t = set + kSets * j;
        if (t >= M) break;
        reaching[j] = __ballot_sync(kFullMask, key[j] >= bounds[t]);
        if (lane == 0) candidates[t * 16 + set_warp] = __popc(reaching[j]);
    }
    __syncthreads();
    // Fewer than k maxima above "no candidate" make a token's bound key 0,
    // which every thread of its S warps reaches (at least 256), so the one
    // test of more than 32 candidates covers that case too.
    bool too_many = false;
#pragma unroll
    for (int j = 0; j < kTokensPerThread; ++j) {
        const int t = set + kSets * j;
        if (t >= M) break;
        const uint32_t count = lane < S ? candidates[t * 16 + lane] : 0u;
        const int32_t before = static_cast<int32_t>(__reduce_add_sync(kFullMask, lane < set_warp ? count : 0u));
        const int32_t gathered = static_cast<int32_t>(__reduce_add_sync(kFullMask, count));
        too_many = too_many || gathered > 32;
        if (gathered <= 32 && ((reaching[j] >> lane) & 1u)) {
            RankScratch &scratch = sh.rank_scratch[t];
            const int32_t at = before + __popc(reaching[j] & ((1u << lane) - 1u));
            scratch.gathered.value[at] = key[j];
            scratch.gathered.id[at] = static_cast<uint32_t>(expert);
        }
    }
    // Warp w's own count of token w's candidates, for its padding and its
    // ranking.
    int32_t gathered = 0;
    if (warp < M) {
        gathered = static_cast<int32_t>(__reduce_add_sync(kFullMask, lane < S ? candidates[warp * 16 + lane] : 0u));
        if (lane >= gathered) sh.rank_scratch[warp].gathered.value[lane] = kNoCandidateKey;  // padding
    }
    if (__syncthreads_or(too_many)) return false;
    if (warp >= M) {
        if (M == 1) write_one_token_padding(a, threadIdx.x - 32, kBlockThreads - 32);
        return true;
    }
    int32_t id = 0, own_id;
    uint32_t chosen_key = kNoCandidateKey, first_key;
    const int rank =
        rank_gathered<uint32_t>(sh.rank_scratch[warp], gathered, r.n_select, lane, own_id, id, chosen_key, first_key);
    if (M == 1) {  // the block starts, in id order as one_token_select.cuh places them
        const bool chosen = lane < gathered && rank < r.n_select;
        const uint32_t chosen_lanes = __ballot_sync(kFullMask, chosen);
        if (chosen) write_one_token_block(a, __popc(chosen_lanes & ((1u << lane) - 1u)), own_id, rank);
        if (kShared && lane == r.n_select) write_one_token_block(a, r.n_select, r.shared_id, r.n_select);
    }
    // The weights this ranking serves read no row slice.
    const RowSlice<S> unread = {};
    write_token<S, kShared, true>(a, sh, warp, 0, unread, shared_logit, id, key_value(chosen_key),
                                  key_value(first_key), /*count_pairs=*/false);
    return true;
}

}  // namespace alphamoe

#endif
