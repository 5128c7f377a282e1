// The phases every specialization runs on its CTA's contiguous token range.
// Specializations differ in how CTAs exchange their expert counts (tiny:
// none; small: one barrier, each CTA sums; large: group sums and rows of
// counts that say whether they are complete, no barrier), and tiny plans
// up to 16 tokens its own way (few_token_plan.cuh); this file holds
// everything else.
//
// Order inside an expert's group is ascending pair index without atomics:
// each warp owns a contiguous run of tokens and counts its pairs per expert;
// the counts become exclusive prefixes over warps, CTAs and experts, and the
// warp then replays its tokens in order, handing out consecutive positions.
#ifndef ALPHAMOE_KERNELS_ROUTE_CTA_CUH
#define ALPHAMOE_KERNELS_ROUTE_CTA_CUH

#include <stdint.h>

#include "common/block_scan.cuh"
#include "common/flavour.cuh"
#include "common/half_row_rank.cuh"
#include "common/warp_topk.cuh"
#include "route_args.h"

namespace alphamoe {

// The warps keep their chosen ids (kPairIdsPerWarp, route_args.h) for the
// placement phase, so that phase does not read them back from global
// memory; pairs beyond these are read back. The staged entry points keep
// each pair's rank among the warp's pairs of its expert above its id.
static_assert(kMaxExperts <= 32768, "pair ids are kept in 16 bits");
constexpr uint32_t kPairIdMask = (1u << kPairIdBits) - 1u;

struct CtaShared {
    union {
        // Per warp and expert: pairs counted in phase 1, then the warp's
        // running position inside the CTA's share of the expert's group.
        int32_t warp_counts[kWarpsPerBlock][kMaxExperts];
        // Token bits (below; the tiny kernel's few-token plan too): bit w
        // of word e, warp w's token has expert e.
        uint32_t token_mask[kMaxExperts];
    };
    // The warp's chosen ids in pair order, from the first pair of its range.
    int16_t pair_ids[kWarpsPerBlock][kPairIdsPerWarp];
    union {
        RankScratch rank_scratch[kWarpsPerBlock];  // phase 1
        // After phase 1: the CTA's count of each expert, for the other CTAs
        // of a cluster to read (the small kernel). 16 bits, which a cluster
        // CTA's pairs fit (kMaxClusterCtaTokens): the other CTAs' reads move
        // half the bytes of 32-bit counts.
        uint16_t published_counts[kMaxExperts];
    };
    int32_t base[kMaxExperts];        // group offset + pairs of earlier CTAs
    int32_t offset[kMaxExperts + 1];  // padded group starts; [E] = live length
    int32_t total[kMaxExperts];       // pairs per expert over the whole call
    int32_t scan_scratch[kWarpsPerBlock];
    // Chosen-expert bits (the tiny kernel's few-token plan where every
    // group is one block): bit e % 32 of word e / 32, expert e has a pair.
    uint32_t chosen_experts[kMaxExperts / 32];
};

// floor(n / block_m) for 0 <= n < 2^31 (every position and count of a plan,
// whose capacity fits int32).
__device__ __forceinline__ int32_t block_m_divide(const RouteArgs &a, int32_t n) {
    return static_cast<int32_t>(alphamoe_divide(static_cast<uint32_t>(n), a.block_m_divisor));
}

// How many bits the block count of an expert of at most most_pairs pairs
// (>= 1) needs: the bound a block scan by ballots takes
// (block_exclusive_scan_below_32).
__device__ __forceinline__ int most_blocks_bits(const RouteArgs &a, int32_t most_pairs) {
    return 32 - __clz(block_m_divide(a, most_pairs - 1) + 1);
}

// How phase 1 tallies a ranked token's pairs for the plan: not at all (the
// few-token plans read pair_ids), in per-warp rows of counts (with each
// pair's rank kept in pair_ids as well: the staged entry points), as
// token bits (a bit per warp in each of its experts' words), or as token
// bits and a bit per chosen expert (the few-token plan of one block an
// expert).
enum PairTally { kTallyNone, kTallyRows, kTallyRankedRows, kTallyBits, kTallyChosenBits };

struct TokenRange {
    int32_t begin;
    int32_t end;
};

__device__ __forceinline__ TokenRange cta_token_range(const RouteArgs &a, int cta) {
    const int64_t begin = static_cast<int64_t>(cta) * a.tokens_per_cta;
    const int64_t end = begin + a.tokens_per_cta;
    TokenRange r;
    r.begin = static_cast<int32_t>(begin < a.num_tokens ? begin : a.num_tokens);
    r.end = static_cast<int32_t>(end < a.num_tokens ? end : a.num_tokens);
    return r;
}

// Unsigned: a CTA may hold up to INT32_MAX tokens ending at INT32_MAX
// (one CTA routing the whole call), where n + 15 and begin + per_warp would
// pass it; every offset here stays within n < 2^31, their sums below 2^32.
__device__ __forceinline__ TokenRange warp_token_range(TokenRange cta, int warp) {
    const uint32_t n = static_cast<uint32_t>(cta.end - cta.begin);
    const uint32_t per_warp = (n + kWarpsPerBlock - 1) / kWarpsPerBlock;
    const uint32_t first = min(n, static_cast<uint32_t>(warp) * per_warp);
    TokenRange r;
    r.begin = cta.begin + static_cast<int32_t>(first);
    r.end = cta.begin + static_cast<int32_t>(min(n, first + per_warp));
    return r;
}

// M == 0 writes the live length and nothing else (contract section 2).
// The condition is uniform over the grid, so no CTA is left at a barrier.
__device__ __forceinline__ bool route_empty_call(const RouteArgs &a) {
    if (a.num_tokens != 0) return false;
    if (blockIdx.x == 0 && threadIdx.x == 0) *a.num_tokens_post_padded = 0;
    return true;
}

// Token bits: where every warp holds at most one token, an expert's tokens
// in the CTA are one word of bits, bit w for warp w's token (a token's ids
// are distinct, and so are their local ids but under an expert map). The
// expert's count and each pair's place among the CTA's pairs of its expert
// are then population counts: no per-warp rows of counts to clear, add to
// and turn into prefixes (each thread 16 rows of shared-memory loads and
// stores, which the SM's shared memory serves a warp's row at a time).
// The host plans them (kPlanTokenBits) in the plain kernels and the small
// flavoured one (e512-m32-k8-bm16 to e512-m512-k10-bm8,
// e256-m128-k8-bm64-deepseek-v3); not in the flavoured large kernel, whose
// calls that count by rows (e256-m4096-k8-bm64-deepseek-v3) are slower with
// their code built in.
static_assert(kBlockThreads >= kMaxExperts && kWarpsPerBlock <= 32, "a thread per expert, a bit per token");

// Every thread of the CTA, before the tokens are ranked.
__device__ __forceinline__ void clear_token_masks(CtaShared &sh) { sh.token_mask[threadIdx.x] = 0u; }

// What a token's ranking covers in the expert mode kShared: the shared
// expert (the last id) is every token's pair k - 1, never ranked.
struct RankedExperts {
    int shared_id;
    int n_candidates;  // the experts ranked: ids 0 .. n_candidates - 1
    int n_select;      // how many of them a token chooses
};
template <bool kShared>
__device__ __forceinline__ RankedExperts ranked_experts(const RouteArgs &a) {
    RankedExperts r;
    r.shared_id = a.num_experts - 1;
    r.n_candidates = kShared ? r.shared_id : a.num_experts;
    r.n_select = kShared ? a.top_k - 1 : a.top_k;
    return r;
}

// The gate weight of each active lane's chosen expert, every flavour.
template <int S, bool kShared>
__device__ __forceinline__ float gate_weight(const RouteArgs &a, const RowSlice<S> &row, int n_candidates,
                                             int lane, float shared_logit, float logit, bool active,
                                             float largest_chosen, float *sum_terms) {
    if constexpr (kSqrtSoftplusScores)
        return expert_score_weight(a.flags, a.scale, active ? alphamoe_sqrt_softplus(logit) : 0.0f, active,
                                   sum_terms);
    float weight;
    if (a.flags & kFlagSigmoid)
        weight = sigmoid_weight(logit, active, !(a.flags & kFlagNoRenormalize), sum_terms);
    else if (a.flags & kFlagNoRenormalize)
        weight = full_row_softmax(row, n_candidates, lane, kShared, shared_logit, logit, active);
    else
        weight = warp_gate_weight(logit, active, largest_chosen, sum_terms);
    return a.scale == 1.0f ? weight : weight * a.scale;
}

// gate_weight where the lanes hold no row slice (the CTA's ranking of one
// token, which takes no softmax without renormalization) and no shared
// expert. Out of line: the weights of the biased routers, from the scores
// the ranking kept, then run straight on into the token's stores rather
// than jumping past this code (e256-m8-k8-bm64-deepseek-v3,
// e256-m1-k8-bm64-deepseek-v3-bf16). Values, not references: no stack.
__device__ __noinline__ float unread_row_gate_weight(uint32_t flags, float scale, float logit, bool active,
                                                     float largest, float *sum_terms) {
    if constexpr (kSqrtSoftplusScores)
        return expert_score_weight(flags, scale, active ? alphamoe_sqrt_softplus(logit) : 0.0f, active, sum_terms);
    const float weight = (flags & kFlagSigmoid)
                             ? sigmoid_weight(logit, active, !(flags & kFlagNoRenormalize), sum_terms)
                             : warp_gate_weight(logit, active, largest, sum_terms);
    return scale == 1.0f ? weight : weight * scale;
}

// A ranked token's outputs, by its warp: lane r < k writes pair r's id and
// weight, tallies it for its (local) expert as `tally` says, and keeps its
// local id in pair_ids (pair j of the warp's range). id, chosen, largest:
// the ranking's results (warp_rank_row's; with the flavours the keys'
// values, key_value). row: the token's logits as the lane holds them (the
// flavours' full softmax reads them). sum_terms: where given, the weights'
// sum is taken through these 16 words of shared memory (sum_of_16_lanes).
// kChosenBits: the kernel may tally kTallyChosenBits (the plain tiny one).
// kStashedScores: with a correction bias, `scores` holds each expert's
// score, which the CTA's ranking took for its key (no shared expert); the
// lanes hold no row slice.
template <int S, bool kShared, bool kFlavoured, bool kChosenBits = false, bool kStashedScores = false>
__device__ __forceinline__ void write_token(const RouteArgs &a, CtaShared &sh, int32_t t, int32_t j0,
                                            const RowSlice<S> &row, float shared_logit, int32_t id,
                                            float chosen, float largest, PairTally tally,
                                            float *sum_terms = nullptr, const float *scores = nullptr) {
    static_assert(!kStashedScores || (kFlavoured && !kShared), "scores of the flavours' keys, no shared expert");
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int k = a.top_k;
    const RankedExperts r = ranked_experts<kShared>(a);
    // Keys are the logits themselves unless a correction bias made them
    // scores: then the chosen logits are read again (cached), unless their
    // scores were kept.
    const bool keys_are_logits = !kFlavoured || !(a.flags & kFlagCorrectionBias);
    const bool scores_kept = kStashedScores && !keys_are_logits;
    float logit = chosen;
    if (!keys_are_logits && !scores_kept)
        logit = lane < r.n_select ? load_logit<kFlavoured>(a, token_row<kFlavoured>(a, t), id) : 0.0f;
    if (kShared) {
        if (lane == k - 1) {
            id = r.shared_id;
            logit = shared_logit;
        }
        largest = fmaxf(largest, shared_logit);  // the non-NaN one when one is NaN
    }
    const bool active = lane < k;
    float weight;
    if (scores_kept)
        weight = expert_score_weight(a.flags, a.scale, active ? scores[id] : 0.0f, active, sum_terms);
    else if constexpr (kStashedScores)
        weight = unread_row_gate_weight(a.flags, a.scale, logit, active, largest, sum_terms);
    else
        weight = kFlavoured ? gate_weight<S, kShared>(a, row, r.n_candidates, lane, shared_logit, logit, active,
                                                      largest, sum_terms)
                            : warp_gate_weight(logit, active, largest, sum_terms);
    if (active) {
        const int32_t p = t * k + lane;  // pairs fit int32 (router creation checks)
        a.topk_ids[p] = id;
        a.topk_weights[p] = weight;
        const int32_t local = kFlavoured ? local_expert(a, id) : id;
        // A token's ids are distinct, so are their local ids but under a
        // map, which may give several experts one local id. Without
        // flavours every id is a plan expert. A ranked pair keeps its rank
        // among the warp's pairs of its expert (the count before it) above
        // its id (the staged entry points: no flavours).
        uint32_t kept = static_cast<uint32_t>(local);
        if (tally == kTallyRankedRows) {
            const int32_t rank = sh.warp_counts[warp][local];
            sh.warp_counts[warp][local] = rank + 1;
            kept |= static_cast<uint32_t>(rank) << kPairIdBits;
        }
        if (tally == kTallyRows && (!kFlavoured || local >= 0)) {
            if (kFlavoured && (a.flags & kFlagExpertMap))
                atomicAdd(&sh.warp_counts[warp][local], 1);
            else
                sh.warp_counts[warp][local] += 1;
        }
        const bool chosen_bits = kChosenBits && tally == kTallyChosenBits;
        if ((tally == kTallyBits || chosen_bits) && (!kFlavoured || local >= 0)) {
            atomicOr(&sh.token_mask[local], 1u << warp);
            if (chosen_bits) atomicOr(&sh.chosen_experts[local >> 5], 1u << (local & 31));
        }
        const int32_t j = j0 + lane;
        if (j < kPairIdsPerWarp) sh.pair_ids[warp][j] = static_cast<int16_t>(kept);
    }
    __syncwarp();
}

// Phase 1: rank each token of the warp's range, write its ids and weights,
// and tally its pairs per (local) expert as `tally` says (the few-token
// plans place pairs from pair_ids alone). Every thread of the CTA calls it
// where tally is kTallyBits or kTallyChosenBits: the words are cleared
// behind a CTA barrier while the first rows load. The next token's logits
// are loaded while the current one is ranked, so a warp always has a row
// in flight. Without kFlavoured: the renormalized softmax over all experts
// only, none of the flavours' steps. kHalfLogits: 16-bit logits, converted
// only once the row is about to be ranked (flavour.cuh, load_half_bits);
// otherwise fp32 ones in the plain kernels.
// kTokenAWarp: the warp holds at most one token (the plain tiny kernel),
// so the loop over its tokens is not unrolled, one step's code, not two,
// and loads no next row; only then may tally be kTallyChosenBits.
template <int S, bool kShared, bool kFlavoured, bool kHalfLogits = false, bool kTokenAWarp = false>
__device__ __forceinline__ void select_tokens(const RouteArgs &a, CtaShared &sh, TokenRange range,
                                              PairTally tally) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const RankedExperts r = ranked_experts<kShared>(a);
    const int shared_id = r.shared_id, n_candidates = r.n_candidates, n_select = r.n_select;
    const bool any = range.begin < range.end;
    constexpr bool kAnyType = kFlavoured || kHalfLogits;  // token_row's element size from a.logits_type
    // The plain softmax's 16-bit rows that warp_rank_half_row ranks, and
    // widens.
    constexpr bool kHalfThreshold = !kFlavoured && kHalfLogits && kHalfRowThresholdRanks<S>;
    const auto load_token_row = [&](const char *row, RowSlice<S> &slice, float &shared_logit) {
        if (kHalfLogits) {
            slice = load_half_row_bits<S>(a, row, n_candidates, lane);
            if (kShared) shared_logit = load_half_bits(row, shared_id);
        } else {
            slice = load_row_slice<S, kFlavoured>(a, row, n_candidates, lane);
            if (kShared) shared_logit = load_logit<kFlavoured>(a, row, shared_id);
        }
    };
    RowSlice<S> next;
    float next_shared = 0.0f;
    if (any) {  // first, so the loads overlap the clearing below
        load_token_row(token_row<kAnyType>(a, range.begin), next, next_shared);
    }
    if (tally == kTallyRows || tally == kTallyRankedRows)
        for (int e = lane; e < a.num_experts; e += 32) sh.warp_counts[warp][e] = 0;
    // Chosen bits only in the plain tiny kernel (kTokenAWarp), whose plan
    // reads them: no code for them elsewhere.
    const bool chosen_bits = kTokenAWarp && tally == kTallyChosenBits;
    if (tally == kTallyBits || chosen_bits) {
        clear_token_masks(sh);
        if (chosen_bits && threadIdx.x < kMaxExperts / 32) sh.chosen_experts[threadIdx.x] = 0u;
        __syncthreads();
    } else {
        __syncwarp();
    }
    if (!any) return;
    // Two tokens per loop step in the plain kernels (e512-m16384-k10-bm8,
    // e256-m8192-k8-bm64). The flavoured kernels keep one: two would spill.
    // The next row's loads stay conditional: loading a row again after the
    // last token, so that no loaded row is moved, makes the warp wait for
    // that load when memory is busiest (e512-m16384-k10-bm8).
#pragma unroll (kFlavoured || kTokenAWarp ? 1 : 2)
    for (int32_t t = range.begin; t < range.end; ++t) {
        RowSlice<S> current = next;
        float shared_logit = next_shared;
        if (!kTokenAWarp && t + 1 < range.end) {
            load_token_row(token_row<kAnyType>(a, t + 1), next, next_shared);
        }
        if (kHalfLogits) {
            if (!kHalfThreshold) widen_half_row<S>(a, current);
            if (kShared) shared_logit = widen_half(a, shared_logit);
        }
        int32_t id = 0;
        float chosen = key_value(kNoCandidateKey), largest;
        if constexpr (kHalfThreshold) {
            warp_rank_half_row<S>(a, current, n_candidates, n_select, lane, sh.rank_scratch[warp], id, chosen,
                                  largest);
        } else if (kFlavoured) {
            uint32_t chosen_key = kNoCandidateKey, first_key;
            bool by_bounds = false;
            // Sqrt-softplus rows of 16 slots with a bias rank by bounds on
            // the keys (e384-m4096-k6-bm64-deepseek-v4-pro).
            if constexpr (kSqrtSoftplusScores && S == 16)
                by_bounds = (a.flags & kFlagCorrectionBias) && a.num_groups <= 1 &&
                            warp_rank_biased_by_bounds<S>(a, current, n_candidates, n_select, lane,
                                                          sh.rank_scratch[warp], id, chosen_key, first_key);
            if (!by_bounds) {
                uint32_t key[S];
                flavour_keys(a, current, n_candidates, lane, key);
                if (a.num_groups > 1) keep_best_groups(a, lane, key);
                warp_rank_keys<S, /*kCountInSteps=*/true>(key, n_select, lane, sh.rank_scratch[warp], id,
                                                          chosen_key, first_key);
            }
            chosen = key_value(chosen_key);
            largest = key_value(first_key);
        } else if (kHalfLogits) {
            // Rows of 1 and 2 slots (half_row_rank.cuh says why).
            uint32_t key[S], chosen_key = kNoCandidateKey, first_key;
            row_keys(current, n_candidates, lane, key);
            warp_rank_keys<S>(key, n_select, lane, sh.rank_scratch[warp], id, chosen_key, first_key);
            chosen = key_value(chosen_key);
            largest = key_value(first_key);
        } else {
            warp_rank_row<S>(current, n_candidates, n_select, lane, sh.rank_scratch[warp], id, chosen, largest);
        }
        // A warp of one token ranks nothing after it: the weights' sum goes
        // through its scratch, as in the one-token rankings (e512-m8-k10-bm8).
        float *sum_terms = kTokenAWarp ? reinterpret_cast<float *>(sh.rank_scratch[warp].gathered.value) : nullptr;
        write_token<S, kShared, kFlavoured, kTokenAWarp>(a, sh, t, (t - range.begin) * a.top_k, current,
                                                         shared_logit, id, chosen, largest, tally, sum_terms);
    }
}

// Turns warp counts into exclusive prefixes over warps; returns, in thread
// e < L, the CTA's pair count for plan expert e (0 elsewhere).
__device__ __forceinline__ int32_t cta_expert_count(const RouteArgs &a, CtaShared &sh) {
    __syncthreads();
    const int e = threadIdx.x;
    int32_t running = 0;
    if (e < a.plan_experts) {
#pragma unroll
        for (int w = 0; w < kWarpsPerBlock; ++w) {
            const int32_t c = sh.warp_counts[w][e];
            sh.warp_counts[w][e] = running;
            running += c;
        }
    }
    return running;
}

// Token bits: the CTA's count of plan expert e in thread e < L (0
// elsewhere), once the warps have ranked their tokens.
__device__ __forceinline__ int32_t cta_expert_count_from_bits(const RouteArgs &a, const CtaShared &sh) {
    __syncthreads();
    const int e = threadIdx.x;
    return e < a.plan_experts ? __popc(sh.token_mask[e]) : 0;
}

// Token bits: each warp's one token, once sh.base holds each expert's
// group start plus the pairs of earlier CTAs: the CTA's earlier pairs of
// the expert are those of the warps before this one.
__device__ __forceinline__ void place_pairs_by_token_bits(const RouteArgs &a, const CtaShared &sh,
                                                          TokenRange cta_range) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const TokenRange range = warp_token_range(cta_range, warp);
    const int k = a.top_k;
    if (range.begin < range.end && lane < k) {
        const int32_t p = range.begin * k + lane;
        const int32_t local = sh.pair_ids[warp][lane];
        if (local >= 0) {
            const int32_t pos = sh.base[local] + __popc(sh.token_mask[local] & ((1u << warp) - 1u));
            a.sorted_token_ids[pos] = p;
            if (a.pair_to_sorted) a.pair_to_sorted[p] = pos;
        } else if (a.pair_to_sorted) {
            a.pair_to_sorted[p] = -1;
        }
    }
}

// What place_pairs leaves for write_plan_rest: thread e's expert group
// (its pairs, its first block, its blocks) and the call's live blocks, and
// whether the plan's blocks fit a block map (the same in every CTA).
struct PlanGroups {
    int32_t total;
    int32_t first_block;
    int32_t blocks;
    int32_t live_blocks;
    bool mapped;
    bool blocks_placed;  // the live blocks' expert ids written with the pairs (write_staged_pairs)
};

// The blocks a CTA's block map holds: the rows of warp_counts after the
// token bits' row. Every block's entry is its expert and how many of its
// positions hold pairs (e << 16 | pairs; block_m <= 256).
constexpr int32_t kBlockMapCapacity = (kWarpsPerBlock - 1) * kMaxExperts;
__device__ __forceinline__ uint32_t *block_map(CtaShared &sh) {
    return reinterpret_cast<uint32_t *>(sh.warp_counts[1]);
}

// A group's map entries are written by its own thread up to this many
// blocks, a loop step each; a longer group's further blocks by its warp
// (the shared expert's group, or any with many pairs): one thread's steps
// add up along a long group (e512-m4096-k10-bm64-shared, 64 blocks), and
// the warp writes its groups one after the other, each a ballot, three
// shuffles and a loop (e256-m8192-k8-bm64, about 5 blocks an expert).
// Unrolled, with a predicate a block, the thread's steps are slower where
// most groups are a block or two (e512-m32-k8-bm16, e512-m128-k8-bm16,
// e256-m128-k8-bm64-deepseek-v3).
constexpr int32_t kBlockMapOwnBlocks = 8;
// The most blocks per plan expert, on average, of a call planned from the
// block map.
constexpr int32_t kBlockMapMaxMeanBlocks = 8;
static_assert(kBlockMapMaxMeanBlocks * kMaxExperts <= kBlockMapCapacity, "a call the map takes fits it");

// The map entry of block b of thread e's group, e << 16 | its pairs.
__device__ __forceinline__ uint32_t block_map_entry(uint32_t expert, int32_t total, int32_t b, int32_t bm) {
    return expert << 16 | static_cast<uint32_t>(min(total - b * bm, bm));
}

// Thread e writes the map entries of expert e's blocks; every thread of
// the CTA calls it.
__device__ __forceinline__ void write_block_map(const RouteArgs &a, CtaShared &sh, const PlanGroups &g) {
    uint32_t *map = block_map(sh) + g.first_block;
    const int32_t bm = a.block_m;
    const uint32_t expert = threadIdx.x;
#pragma unroll 1
    for (int32_t b = 0; b < min(g.blocks, kBlockMapOwnBlocks); ++b) map[b] = block_map_entry(expert, g.total, b, bm);
    const int lane = threadIdx.x & 31;
#pragma unroll 1
    for (uint32_t pending = __ballot_sync(kFullMask, g.blocks > kBlockMapOwnBlocks); pending;
         pending &= pending - 1) {
        const int src = __ffs(pending) - 1;
        const int32_t first = __shfl_sync(kFullMask, g.first_block, src);
        const int32_t blocks = __shfl_sync(kFullMask, g.blocks, src);
        const int32_t total = __shfl_sync(kFullMask, g.total, src);
        const uint32_t id = threadIdx.x - lane + src;
#pragma unroll 1
        for (int32_t b = kBlockMapOwnBlocks + lane; b < blocks; b += 32)
            block_map(sh)[first + b] = block_map_entry(id, total, b, bm);
    }
}

// The (local) expert of pair j of the warp's range, pair index p: kept in
// pair_ids, or past them read back from topk_ids (both written by this
// same thread in phase 1).
template <bool kFlavoured>
__device__ __forceinline__ int32_t warp_pair_expert(const RouteArgs &a, const CtaShared &sh, int32_t j, int32_t p) {
    if (j < kPairIdsPerWarp) return sh.pair_ids[threadIdx.x >> 5][j];
    return kFlavoured ? local_expert(a, a.topk_ids[p]) : a.topk_ids[p];
}

// Staged placement (the large kernel's staged entry points, where the
// host plans it, kPlanStagedPairs): with each pair's rank kept at
// counting, the CTA lists its pairs in plan order (by expert, then pair)
// once it has sent its counts, each at its expert's run start in the list
// plus the pairs of the CTA's earlier warps and its rank; once the groups'
// offsets are known, consecutive threads copy consecutive entries of that
// list to their places. An expert's pairs in the CTA then go out in one
// warp's store, adjacent, where a pair a lane in pair order puts each
// lane's store in another expert's group: the placement's time follows
// the number of its scattered stores.
// The list: 16-bit entries in the rankings' scratch, free once every token
// is ranked, each naming a kept pair (warp * kPairIdsPerWarp + j).
static_assert(sizeof(CtaShared::rank_scratch) / sizeof(uint16_t) >= kStagedMaxPairs, "the list fits the scratch");
static_assert(kWarpsPerBlock * kPairIdsPerWarp <= 65536, "a list entry names a kept pair in 16 bits");

__device__ __forceinline__ uint16_t *staged_list(CtaShared &sh) {
    return reinterpret_cast<uint16_t *>(sh.rank_scratch);
}
__device__ __forceinline__ const uint16_t *staged_list(const CtaShared &sh) {
    return reinterpret_cast<const uint16_t *>(sh.rank_scratch);
}

// Every thread of the CTA, once the pairs are counted by rows (the warps'
// rows hold their starts): lists the CTA's pairs. Returns, in thread e,
// where expert e's run starts in the list. Writes sh.base, which place_pairs
// writes again behind a barrier.
__device__ __forceinline__ int32_t stage_ranked_pairs(const RouteArgs &a, CtaShared &sh, TokenRange cta_range,
                                                      int32_t count) {
    int32_t listed;
    const int32_t run_start = block_exclusive_scan(count, sh.scan_scratch, &listed);
    sh.base[threadIdx.x] = run_start;
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const TokenRange range = warp_token_range(cta_range, warp);
    const int32_t *warp_start = sh.warp_counts[warp];
    const int32_t pairs = max(range.end - range.begin, 0) * a.top_k;
    uint16_t *list = staged_list(sh);
#pragma unroll 1
    for (int32_t j = lane; j < pairs; j += 32) {
        const uint32_t kept = static_cast<uint16_t>(sh.pair_ids[warp][j]);
        const uint32_t local = kept & kPairIdMask;
        const int32_t slot = sh.base[local] + warp_start[local] + static_cast<int32_t>(kept >> kPairIdBits);
        list[slot] = static_cast<uint16_t>(warp * kPairIdsPerWarp + j);
    }
    return run_start;
}

// Every thread of the CTA, once sh.base holds each expert's group start
// plus the pairs of earlier CTAs, less its run's start in the list: entry
// i of the list goes to sh.base[expert] + i. A group starts at a multiple
// of block_m and fills the first position of each of its blocks, so where
// blocks_placed the pair placed at a multiple of block_m writes its block's
// expert id, and the live blocks' ids need no search of the group starts
// (write_plan_by_runs).
__device__ __forceinline__ void write_staged_pairs(const RouteArgs &a, const CtaShared &sh, TokenRange cta_range,
                                                   bool blocks_placed) {
    const int k = a.top_k;
    const int32_t tokens = cta_range.end - cta_range.begin;
    const int32_t warp_pairs = (tokens + kWarpsPerBlock - 1) / kWarpsPerBlock * k;  // warp_token_range's
    const int32_t first_pair = cta_range.begin * k;
    const uint16_t *list = staged_list(sh);
    const uint16_t *kept_ids = reinterpret_cast<const uint16_t *>(sh.pair_ids);
#pragma unroll 1
    for (int32_t i = threadIdx.x; i < tokens * k; i += kBlockThreads) {
        const uint32_t entry = list[i];
        const uint32_t warp = entry / kPairIdsPerWarp;
        const int32_t p = first_pair + static_cast<int32_t>(warp) * warp_pairs +
                          static_cast<int32_t>(entry - warp * kPairIdsPerWarp);
        const uint32_t expert = kept_ids[entry] & kPairIdMask;
        const int32_t pos = sh.base[expert] + i;
        a.sorted_token_ids[pos] = p;
        if (a.pair_to_sorted) a.pair_to_sorted[p] = pos;
        if (blocks_placed) {
            const int32_t block = block_m_divide(a, pos);
            if (block * a.block_m == pos) a.expert_ids[block] = static_cast<int32_t>(expert);
        }
    }
}

// Per-warp rows of counts under an expert map, which may give several of a
// token's experts one local id: the warp takes its pairs in order, 32 a
// step (a lane each). A pair's position is its local id's next one plus
// the pairs of that id on lower lanes of the step (one match), and the
// highest of those lanes advances the share: fewer matches than one a
// token (e512-m4096-k10-bm64-ep-map64). Without a map a token's ids are
// distinct, and place_pairs_by_rows' step per token, with no match, is
// faster.
__device__ __forceinline__ void place_mapped_pairs_by_rows(const RouteArgs &a, CtaShared &sh, TokenRange range) {
    const int lane = threadIdx.x & 31;
    int32_t *running = sh.warp_counts[threadIdx.x >> 5];
    const int32_t pairs = max(range.end - range.begin, 0) * a.top_k;
#pragma unroll 1
    for (int32_t j = lane; j < pairs + lane; j += 32) {  // every lane takes every step
        const bool in_range = j < pairs;
        // Unsigned: past the warp's pairs (unused) it may pass INT32_MAX.
        const int32_t p = static_cast<int32_t>(static_cast<uint32_t>(range.begin) * a.top_k + j);
        int32_t local = -1;
        if (in_range) local = warp_pair_expert<true>(a, sh, j, p);
        const bool planned = local >= 0;
        const uint32_t same = __match_any_sync(kFullMask, local);
        const int32_t pos = planned ? sh.base[local] + running[local] + __popc(same & ((1u << lane) - 1u)) : -1;
        if (planned) a.sorted_token_ids[pos] = p;
        if (in_range && a.pair_to_sorted) a.pair_to_sorted[p] = pos;
        __syncwarp();
        if (planned && (same >> lane) == 1u) running[local] += __popc(same);
        __syncwarp();
    }
}

// Per-warp rows of counts: the warp replays its tokens in order, each pair
// taking the next position of its expert's share.
template <bool kFlavoured>
__device__ __forceinline__ void place_pairs_by_rows(const RouteArgs &a, CtaShared &sh, TokenRange cta_range) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const TokenRange range = warp_token_range(cta_range, warp);
    if (kFlavoured && (a.flags & kFlagExpertMap)) {
        place_mapped_pairs_by_rows(a, sh, range);
        return;
    }
    const int k = a.top_k;
    int32_t *running = sh.warp_counts[warp];
#pragma unroll 1
    for (int32_t t = range.begin; t < range.end; ++t) {
        // Unsigned: for a lane past k (unused) it may pass INT32_MAX.
        const int32_t p = static_cast<int32_t>(static_cast<uint32_t>(t) * k + lane);
        const int32_t j = (t - range.begin) * k + lane;
        const int32_t local = lane < k ? warp_pair_expert<kFlavoured>(a, sh, j, p) : -1;
        // A pair of this rank's plan (without flavours, every pair).
        if (lane < k && (!kFlavoured || local >= 0)) {
            const int32_t pos = sh.base[local] + running[local];
            running[local] += 1;
            a.sorted_token_ids[pos] = p;
            if (a.pair_to_sorted) a.pair_to_sorted[p] = pos;
        }
        if (kFlavoured && lane < k && local < 0 && a.pair_to_sorted) a.pair_to_sorted[p] = -1;
        __syncwarp();
    }
}

// The least block_m at which the staged placement writes the block ids
// (write_staged_pairs) rather than CTA 0 searching the group starts: it
// pays for few large blocks (e8-m4096-k2-bm64); with many small ones each
// line of ids is written 4 bytes at a time by several CTAs, where the
// search's warps write whole lines (e512-m16384-k10-bm8).
constexpr int32_t kPlacedBlockIdsMinBlockM = 32;

// Whether the CTA listed its pairs (stage_ranked_pairs), and thread e's
// run start in that list.
struct StagedPairs {
    bool held;
    int32_t run_start;
};

// The most bits of an expert's block count (at most 3 blocks) for which
// place_pairs' block scan, where asked (kFewBlocksScan), takes a ballot
// per bit (block_scan.cuh) instead of its chain of five shuffles
// (e128-m64-k8-bm64, e256-m64-k8-bm64, e256-m128-k8-bm64-deepseek-v3 with
// cold code). Up to 31 blocks (5 bits) it is slower (e512-m128-k10-bm8),
// and its code built into the large kernel, unused, slows it
// (e256-m1024-k8-bm64): only the small kernel asks for it.
constexpr int kFewBlocksScanMaxBits = 2;

// Phase 3: group offsets from the totals (thread e holds expert e's), then
// positions for the CTA's pairs. earlier_ctas: pairs of expert e that CTAs
// before this one hold. This phase and the next run once per call, their
// code fetched cold: their loops stay rolled (#pragma unroll 1), since an
// unrolled copy costs more instruction fetches than the loop steps it saves
// (the token loop's steps wait on one another through `running` anyway).
// With token bits the block map is written before the barrier the pairs
// wait for anyway; per-warp rows of counts hold the map's space until the
// pairs are placed. Staged pairs are copied from their list.
// kFewBlocksScan: the block scan by ballots where it pays
// (kFewBlocksScanMaxBits).
template <bool kFlavoured, bool kFewBlocksScan = false>
__device__ __forceinline__ PlanGroups place_pairs(const RouteArgs &a, CtaShared &sh, TokenRange cta_range,
                                                  int32_t total, int32_t earlier_ctas, bool token_bits,
                                                  const StagedPairs &staged) {
    const int e = threadIdx.x;
    const int32_t bm = a.block_m;
    PlanGroups g;
    g.total = total;
    g.blocks_placed = staged.held && bm >= kPlacedBlockIdsMinBlockM;
    // ceil(total / bm), as (total - 1) / bm + 1: the divisor takes
    // numerators below 2^31, and total - 1 is (total + bm - 1 may not be).
    g.blocks = e < a.plan_experts && total > 0 ? block_m_divide(a, total - 1) + 1 : 0;
    // An expert holds at most M pairs (a token's ids are distinct), M k
    // under an expert map, which may give several of them one local id.
    const int32_t most_pairs = (a.flags & kFlagExpertMap) ? a.num_tokens * a.top_k : a.num_tokens;
    const int bits = most_blocks_bits(a, most_pairs);
    g.first_block = kFewBlocksScan && bits <= kFewBlocksScanMaxBits
                        ? block_exclusive_scan_below_32(g.blocks, sh.scan_scratch, &g.live_blocks, bits)
                        : block_exclusive_scan(g.blocks, sh.scan_scratch, &g.live_blocks);
    // Where most groups are long (few experts, many tokens), walking the
    // runs costs less than mapping every block (e8-m4096-k2-bm64, 17 blocks
    // an expert); the bound also keeps the map within its rows. The
    // flavoured kernels walk them where they count by rows
    // (e256-m4096-k8-bm64-deepseek-v3, e384-m4096-k8-bm64-kimi-k2), though
    // mapping would pay with an expert map (e512-m4096-k10-bm64-ep-map64).
    g.mapped = g.live_blocks <= kBlockMapMaxMeanBlocks * a.plan_experts && (token_bits || !kFlavoured);
    const int32_t offset = g.first_block * bm;
    if (e < a.plan_experts) {
        sh.base[e] = offset + earlier_ctas - (staged.held ? staged.run_start : 0);
        if (!g.mapped) {
            sh.offset[e] = offset;
            sh.total[e] = total;
        }
    }
    if (e == 0 && !g.mapped) sh.offset[a.plan_experts] = g.live_blocks * bm;
    if (g.mapped && token_bits) write_block_map(a, sh, g);
    __syncthreads();
    if (token_bits)
        place_pairs_by_token_bits(a, sh, cta_range);
    else if (staged.held)
        write_staged_pairs(a, sh, cta_range, g.blocks_placed);
    else
        place_pairs_by_rows<kFlavoured>(a, sh, cta_range);
    return g;
}

// The largest block_m whose padding runs (at most block_m - 1 sentinels)
// are written by a few lanes per expert, which beats a warp walking the
// groups one by one (e512-m16384-k10-bm8); with block_m 64 the warp wins
// (e8-m4096-k2-bm64).
constexpr int32_t kShortRunMaxBlockM = 16;

// With kFlagTailFill: sentinels from the live length to the capacity, and
// block id -1 past the live blocks, spread over `threads` threads.
__device__ __forceinline__ void fill_tail(const RouteArgs &a, int32_t live_length, int32_t live_blocks,
                                          uint32_t thread, uint32_t threads) {
    const int32_t sentinel = a.num_tokens * a.top_k;
#pragma unroll 1
    for (uint32_t pos = live_length + thread; pos < static_cast<uint32_t>(a.capacity); pos += threads)
        a.sorted_token_ids[pos] = sentinel;
    const uint32_t capacity_blocks = block_m_divide(a, a.capacity);
#pragma unroll 1
    for (uint32_t b = live_blocks + thread; b < capacity_blocks; b += threads) a.expert_ids[b] = -1;
}

// expert_counts[e] and expert_offsets[e], where asked for.
__device__ __forceinline__ void write_expert_table_entry(const RouteArgs &a, int32_t e, int32_t count,
                                                         int32_t offset) {
    if (a.expert_counts) a.expert_counts[e] = count;
    if (a.expert_offsets) a.expert_offsets[e] = offset;
}

// Everything of the plan that is not a pair position, spread over the grid:
// padding sentinels, expert_ids, counts, offsets, live length, tail fill.
// With long runs each expert's entries of the table are written by the lane
// that reads its group, in the same pass; with short runs in a pass of
// their own, a thread an expert, which beats the groups' first lanes
// writing them.
__device__ __forceinline__ void write_plan_by_runs(const RouteArgs &a, const CtaShared &sh, int cta,
                                                   int num_ctas, bool blocks_placed) {
    const int E = a.plan_experts;
    const int32_t bm = a.block_m;
    const int32_t sentinel = a.num_tokens * a.top_k;
    const int32_t live_length = sh.offset[E];
    // 32-bit indices: a grid has at most 2^17 threads and capacity < 2^31,
    // so unsigned positions never wrap, and the loops need no 64-bit
    // trip-count division (a call to a subroutine far from this code).
    const uint32_t thread = static_cast<uint32_t>(cta) * kBlockThreads + threadIdx.x;
    const uint32_t threads = static_cast<uint32_t>(num_ctas) * kBlockThreads;

    // Padding and, while the call has no more blocks than experts, block
    // ids: per group a run of at most block_m - 1 sentinels and a run of
    // block ids (at most E in all).
    const int32_t live_blocks = block_m_divide(a, live_length);
    const bool blocks_by_expert = live_blocks <= E && !blocks_placed;
    if (bm <= kShortRunMaxBlockM) {
        // Short runs: a group of G lanes per expert, experts spread over
        // the grid, the lanes on consecutive positions: with G the power of
        // two holding block_m - 1, one store covers a run. A thread storing
        // its run one sentinel after the other instead makes a warp's store
        // touch up to 32 runs, one after the other, which costs most where
        // most experts have pairs. G is capped so that a group has at most
        // two experts: a small grid loops over experts, and each pass costs
        // more than the stores it saves. With few pairs (fewer than E / 4)
        // most runs are empty: a thread per expert (G = 1).
        const int run_log2 = sentinel < E / 4 || bm <= 2 ? 0 : 32 - __clz(bm - 2);
        // log2(2 * threads) - ceil(log2(E)): a lower bound of log2 of
        // 2 * threads / E, without a division.
        const int spread_log2 = (31 - __clz(2u * threads)) - (32 - __clz(static_cast<uint32_t>(E - 1)));
        const int lanes_log2 = max(0, min(run_log2, spread_log2));
        const int32_t lanes = 1 << lanes_log2;
        const int32_t sub = threadIdx.x & (lanes - 1);
        const int32_t first_expert = (threadIdx.x >> lanes_log2) * num_ctas + cta;
        const int32_t lane_groups = threads >> lanes_log2;
#pragma unroll 1
        for (int32_t e = first_expert; e < E; e += lane_groups) {
            const int32_t begin = sh.offset[e];
            const int32_t end = sh.offset[e + 1];
            // Unrolled: with one lane per expert a run takes up to block_m - 1
            // steps. Unsigned: a run may end within `lanes` of INT32_MAX.
            for (uint32_t pos = begin + sh.total[e] + sub; pos < static_cast<uint32_t>(end); pos += lanes)
                a.sorted_token_ids[pos] = sentinel;
            if (blocks_by_expert)
                for (int32_t b = block_m_divide(a, begin) + sub, to = block_m_divide(a, end); b < to; b += lanes)
                    a.expert_ids[b] = e;
        }
    } else {
        // Long runs, where scattered serial stores cost most: lane l of warp
        // w holds expert w + l * W (W warps in the grid), and the warp writes
        // its experts' runs one by one, lanes on consecutive positions.
        const int lane = threadIdx.x & 31;
        const int32_t warp = thread >> 5;
        const int32_t warps = threads >> 5;
#pragma unroll 1
        for (int32_t first = warp; first < E; first += 32 * warps) {
            const int32_t e = first + lane * warps;
            int32_t pad_from = 0, pad_to = 0, block_from = 0, block_to = 0;
            if (e < E) {
                write_expert_table_entry(a, e, sh.total[e], sh.offset[e]);
                pad_from = sh.offset[e] + sh.total[e];
                pad_to = sh.offset[e + 1];
                block_from = block_m_divide(a, sh.offset[e]);
                block_to = blocks_by_expert ? block_m_divide(a, pad_to) : block_from;
            }
#pragma unroll 1
            for (uint32_t pending = __ballot_sync(kFullMask, pad_from < pad_to); pending; pending &= pending - 1) {
                const int src = __ffs(pending) - 1;
                const uint32_t to = __shfl_sync(kFullMask, pad_to, src);
                // Unsigned: a run may end within 32 of INT32_MAX.
#pragma unroll 1
                for (uint32_t pos = __shfl_sync(kFullMask, pad_from, src) + lane; pos < to; pos += 32)
                    a.sorted_token_ids[pos] = sentinel;
            }
#pragma unroll 1
            for (uint32_t pending = __ballot_sync(kFullMask, block_from < block_to); pending;
                 pending &= pending - 1) {
                const int src = __ffs(pending) - 1;
                const int32_t to = __shfl_sync(kFullMask, block_to, src);
                const int32_t id = first + src * warps;
#pragma unroll 1
                for (int32_t b = __shfl_sync(kFullMask, block_from, src) + lane; b < to; b += 32)
                    a.expert_ids[b] = id;
            }
        }
    }
    // Beyond that a group can hold thousands of blocks (the shared expert,
    // or skewed routing): each block finds its expert by a binary search of
    // the group starts instead.
    if (!blocks_by_expert && !blocks_placed) {
#pragma unroll 1
        for (uint32_t b = thread; b < static_cast<uint32_t>(live_blocks); b += threads) {
            // The last group starting at or before the block's first position
            // (empty groups start where the next one does).
            const int32_t pos = static_cast<int32_t>(b) * bm;
            int32_t lo = 0, hi = E;  // sh.offset[lo] <= pos < sh.offset[hi]
            while (hi - lo > 1) {
                const int32_t mid = (lo + hi) >> 1;
                if (sh.offset[mid] <= pos) lo = mid;
                else hi = mid;
            }
            a.expert_ids[b] = lo;
        }
    }
    if (bm <= kShortRunMaxBlockM) {
#pragma unroll 1
        for (uint32_t e = thread; e < static_cast<uint32_t>(E); e += threads)
            write_expert_table_entry(a, e, sh.total[e], sh.offset[e]);
    }
    if (thread == 0) {
        *a.num_tokens_post_padded = live_length;
        if (a.expert_offsets) a.expert_offsets[E] = live_length;
    }
    if (a.flags & kFlagTailFill) fill_tail(a, live_length, live_blocks, thread, threads);
}

// The plan's blocks from the block map, every thread of the grid owning
// consecutive positions and blocks (as fill_tail): a sentinel where the
// block's pairs end, the block's expert id. The expert table is CTA 0's,
// from each thread's group.
__device__ __forceinline__ void write_plan_by_block_map(const RouteArgs &a, CtaShared &sh, const PlanGroups &g) {
    const uint32_t *map = block_map(sh);
    const int32_t bm = a.block_m;
    const int32_t live_length = g.live_blocks * bm;
    const int32_t sentinel = a.num_tokens * a.top_k;
    const uint32_t thread = blockIdx.x * kBlockThreads + threadIdx.x;
    const uint32_t threads = gridDim.x * kBlockThreads;
#pragma unroll 1
    for (uint32_t p = thread; p < static_cast<uint32_t>(live_length); p += threads) {
        const uint32_t b = alphamoe_divide(p, a.block_m_divisor);
        if (p - b * bm >= (map[b] & 0xffffu)) a.sorted_token_ids[p] = sentinel;
    }
    if (!g.blocks_placed) {
#pragma unroll 1
        for (uint32_t b = thread; b < static_cast<uint32_t>(g.live_blocks); b += threads)
            a.expert_ids[b] = static_cast<int32_t>(map[b] >> 16);
    }
    const int e = threadIdx.x;
    if (blockIdx.x == 0 && e < a.plan_experts) write_expert_table_entry(a, e, g.total, g.first_block * bm);
    if (thread == 0) {
        *a.num_tokens_post_padded = live_length;
        if (a.expert_offsets) a.expert_offsets[a.plan_experts] = live_length;
    }
    if (a.flags & kFlagTailFill) fill_tail(a, live_length, g.live_blocks, thread, threads);
}

// Everything of the plan that is not a pair position, once place_pairs
// has placed the CTA's pairs: from the block map where the blocks fit one
// (the rows of counts give it their space once every warp has placed its
// pairs), else by walking the experts' runs, each step of which is a
// chain of shared-memory loads and branches (e512-m32-k8-bm16,
// e512-m512-k10-bm8, e512-m4096-k10-bm64, e256-m64-k8-bm64,
// e256-m128-k8-bm64-deepseek-v3).
__device__ __forceinline__ void write_plan_rest(const RouteArgs &a, CtaShared &sh, const PlanGroups &g,
                                                bool token_bits) {
    if (!g.mapped) {
        write_plan_by_runs(a, sh, blockIdx.x, gridDim.x, g.blocks_placed);
        return;
    }
    if (!token_bits) {
        __syncthreads();
        write_block_map(a, sh, g);
        __syncthreads();
    }
    write_plan_by_block_map(a, sh, g);
}

}  // namespace alphamoe

#endif
