// The wide kernels (routing 3 in variants.def): rows of more than
// kMaxExperts experts (up to kWideMaxExperts) or more than kMaxTopK chosen
// a token (up to kWideMaxTopK), every hash-routing call and every call of
// redundant experts, every routing flavour, in one body for the three
// specializations: tiny is one CTA, small and large a cooperative grid
// that the host sizes. The narrow kernels' plans keep a thread per expert
// and 16-bit ids; here a warp ranks a token from its row of dynamic shared
// memory (or takes its experts from the hash table), the same row then
// counts its pairs per expert, and the grid turns the counts into
// positions through the count table (wide_exchange).
//
// Order inside an expert's group is ascending pair index, as in every
// kernel: a warp owns a contiguous run of tokens, its counts become
// exclusive prefixes over warps, CTAs and experts, and it replays its
// tokens in order.
#include <float.h>

#include "common/dependent_launch.cuh"
#include "common/entry_point.cuh"
#include "common/flavour.cuh"
#include "common/grid_barrier.cuh"
#include "common/route_cta.cuh"

using namespace alphamoe;

namespace {

static_assert(kWarpsPerBlock * 32 == kBlockThreads, "a warp a token in flight");

constexpr int kWideOneBarrierCtas = 8;

// A warp's ranking scratch (wide_rank_staged): the 64 bound candidates,
// up to 64 gathered candidates, the chosen.
struct alignas(16) WideRankScratch {
    uint32_t bound[64];
    uint64_t gathered[64];
    uint64_t chosen[32];
};

// bound_candidate (common/warp_topk.cuh) for 64 keys: the key halved, its low 6 bits the tag.
__device__ __forceinline__ uint32_t bound_candidate_of_64(uint32_t key, int i) {
    return ((key >> 1) & ~63u) | static_cast<uint32_t>(63 - i);
}

// The dynamic shared memory of a wide CTA (kWideSharedBytes, route_args.h,
// which the host reserves).
struct WideShared {
    // Per warp: the keys of the token it ranks (a row of up to 64 slots a
    // lane); once its tokens are ranked, its pairs per plan expert, then
    // the position of its next pair of each expert.
    int32_t warp_counts[kWarpsPerBlock][kWideMaxExperts];
    float bias[kWideMaxExperts];          // the correction bias, read once a CTA
    int32_t offset[kWideMaxExperts + 1];  // padded group starts; [L] = live length
    int32_t total[kWideMaxExperts];       // pairs per expert over the call
    int32_t before[kWideMaxExperts];      // pairs per expert in earlier CTAs
    WideRankScratch rank[kWarpsPerBlock];
    int32_t scan_scratch[kWarpsPerBlock];
};
static_assert(sizeof(WideShared) <= kWideSharedBytes, "the host reserves the CTA's shared memory");

__device__ __forceinline__ WideShared &wide_shared() {
    extern __shared__ __align__(16) unsigned char wide_smem[];
    return *reinterpret_cast<WideShared *>(wide_smem);
}

// The per-expert score of a sigmoid or sqrt-softplus call (kFlagSqrtSoftplus
// names the latter: these kernels score either at run time).
__device__ __forceinline__ float wide_score(const RouteArgs &a, float x) {
    return (a.flags & kFlagSqrtSoftplus) ? alphamoe_sqrt_softplus(x) : alphamoe_sigmoid(x);
}

// The sum of x over the warp's 32 lanes, the same bits in every lane (a
// butterfly: every lane adds the same pairs).
__device__ __forceinline__ float sum_of_32_lanes(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(kFullMask, x, offset);
    return x;
}

__device__ __forceinline__ float max_of_32_lanes(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) x = fmaxf(x, __shfl_xor_sync(kFullMask, x, offset));
    return x;
}

// The gate weight of each active lane's chosen expert (logit x), every
// flavour but the full-row softmax, with the contract's non-finite rules.
__device__ __forceinline__ float wide_chosen_weight(const RouteArgs &a, float x, bool active) {
    const bool renormalize = !(a.flags & kFlagNoRenormalize);
    if (!(a.flags & (kFlagSigmoid | kFlagSqrtSoftplus))) {  // the renormalized softmax
        const bool counted = active && !isnan(x);
        const float largest = max_of_32_lanes(counted ? x : -INFINITY);
        const int n_inf = __popc(__ballot_sync(kFullMask, counted && x == INFINITY));
        const float e = counted ? expf(x - largest) : 0.0f;
        const float sum = sum_of_32_lanes(e);
        if (largest == INFINITY) return counted && x == INFINITY ? 1.0f / static_cast<float>(n_inf) : 0.0f;
        return largest > -INFINITY ? e / sum : 0.0f;
    }
    float s = active ? wide_score(a, x) : 0.0f;
    if (isnan(s)) s = 0.0f;
    if (!renormalize) return s;
    const float sum = sum_of_32_lanes(s);
    const int n_inf = __popc(__ballot_sync(kFullMask, s == INFINITY));  // sqrt-softplus of +inf only
    if (n_inf > 0) return s == INFINITY ? 1.0f / static_cast<float>(n_inf) : 0.0f;
    return sum > 0.0f ? s / sum : 0.0f;
}

// The full-row softmax probability of each active lane's logit
// (ALPHAMOE_FLAG_NO_RENORMALIZE with softmax scoring): the largest and the
// sum run over every logit of the row, the shared column included.
__device__ __forceinline__ float wide_full_row_softmax(const RouteArgs &a, const char *row, int lane, float x,
                                                       bool active) {
    float m = -INFINITY;
    uint32_t n_inf = 0;
    for (int e = lane; e < a.num_experts; e += 32) {
        const float v = load_logit<true>(a, row, e);
        if (!isnan(v)) m = fmaxf(m, v);
        n_inf += v == INFINITY ? 1u : 0u;
    }
    m = max_of_32_lanes(m);
    if (m == INFINITY) {
        n_inf = __reduce_add_sync(kFullMask, n_inf);
        return active && x == INFINITY ? 1.0f / static_cast<float>(n_inf) : 0.0f;
    }
    if (!(m > -INFINITY)) return 0.0f;
    float sum = 0.0f;
    for (int e = lane; e < a.num_experts; e += 32) {
        const float v = load_logit<true>(a, row, e);
        if (!isnan(v)) sum += expf(v - m);
    }
    sum = sum_of_32_lanes(sum);
    return active && !isnan(x) ? expf(x - m) / sum : 0.0f;
}

// A token's keys in the warp's row of shared memory, slot i of lane l at
// word 32 i + l (contract: the logits, or with a correction bias
// fl(score + b); kNoCandidateKey past the candidates), and each lane's best
// two. The row's loads are all issued first, straight from memory into
// registers and on into the row; the keys are then formed in a rolled
// loop: a warp ranking one token runs every instruction it fetches many
// times, where unrolled slots are fetched one after the other
// (e896-m1-k16-bm64-kimi-k3).
template <int S, class Key>
__device__ __forceinline__ void stage_keys(const RouteArgs &a, const char *row, int n_candidates, int lane,
                                           uint32_t *keys, uint32_t &best, uint32_t &second, Key key_of) {
    // Rows of 64 slots in two halves: 64 loads in flight beside the rest
    // of the ranking's state would spill.
    constexpr int kChunk = S < 32 ? S : 32;
#pragma unroll
    for (int c = 0; c < S; c += kChunk) {
        float x[kChunk];
#pragma unroll
        for (int i = 0; i < kChunk; ++i) {
            const int e = (c + i) * 32 + lane;
            x[i] = e < n_candidates ? load_logit<true>(a, row, e) : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < kChunk; ++i) keys[(c + i) * 32 + lane] = __float_as_uint(x[i]);
        asm volatile("" ::: "memory");  // the next half's loads stay after these stores
    }
    best = second = kNoCandidateKey;
#pragma unroll 2
    for (int i = 0; i < S; ++i) {
        const int e = i * 32 + lane;
        const uint32_t key = e < n_candidates ? key_of(__uint_as_float(keys[e]), e) : kNoCandidateKey;
        keys[e] = key;
        second = max(second, min(best, key));
        best = max(best, key);
    }
}

// wide_rank_staged's general rounds (many equal keys): each round the
// warp's largest key wins, the lower id on ties, and the winner's lane
// finds its next best in its slots of the row.
template <int S>
__device__ __forceinline__ void rank_staged_by_rounds(uint32_t *keys, int n_select, int lane, int32_t &id_out) {
    const auto lane_best = [&](uint32_t &best, int &slot) {
        best = kNoCandidateKey;
        slot = 0;
#pragma unroll 4
        for (int i = 0; i < S; ++i) {
            const uint32_t key = keys[i * 32 + lane];
            if (key > best) {
                best = key;
                slot = i;
            }
        }
    };
    uint32_t best;
    int slot;
    lane_best(best, slot);
    for (int r = 0; r < n_select; ++r) {
        const uint32_t top = __reduce_max_sync(kFullMask, best);
        const uint32_t mine = best == top ? static_cast<uint32_t>(slot * 32 + lane) : 0xffffffffu;
        const int winner = static_cast<int>(__reduce_min_sync(kFullMask, mine));
        if (lane == r) id_out = winner;
        if (lane == (winner & 31)) {
            keys[winner] = kNoCandidateKey;
            lane_best(best, slot);
        }
    }
}

// Grouped selection over a staged row: a group's score from the best two
// keys of its experts, which the lanes take 32 apart (group_score; the
// contract's rule, as keep_best_groups has it), then the keys of the
// groups not kept out, and each lane's best two again.
template <int S>
__device__ __forceinline__ void wide_keep_best_groups(const RouteArgs &a, uint32_t *keys, int lane, uint32_t &best,
                                                      uint32_t &second) {
    const int groups = a.num_groups;
    const int size = a.num_experts / groups;
    const bool pair_sum = (a.flags & kFlagCorrectionBias) && a.num_experts > groups;
    uint32_t my_group = kNoCandidateKey;  // lane g < groups: the score key of group g
    for (int g = 0; g < groups; ++g) {
        uint32_t b = kNoCandidateKey, s = kNoCandidateKey;
        for (int e = g * size + lane; e < (g + 1) * size; e += 32) merge_best_two(b, s, keys[e], kNoCandidateKey);
        const uint32_t score = group_score(b, s, pair_sum, lane);
        if (lane == g) my_group = score;
    }
    const uint32_t kept = best_groups(my_group, groups, a.topk_groups, lane);
    best = second = kNoCandidateKey;
#pragma unroll 2
    for (int i = 0; i < S; ++i) {
        const int e = i * 32 + lane;
        uint32_t key = keys[e];
        if (e < a.num_experts && !((kept >> (e / size)) & 1u)) {
            key = kNoCandidateKey;
            keys[e] = key;
        }
        merge_best_two(best, second, key, kNoCandidateKey);
    }
}

// The ranking of a staged row (stage_keys): lane r < n_select receives the
// r-th expert (its position in the row). warp_rank_keys's method with the
// bound from the lanes' best two keys: 64 keys of distinct experts, so
// their n-th largest bounds the row's for n <= 32, where the lanes' best
// keys alone leave too many candidates at k = 32 (e2048-m2048-k32-bm64).
// Up to 64 candidates, two a lane, are ranked by counting; more (many
// equal keys) take the rounds.
template <int S>
__device__ __forceinline__ void wide_rank_staged(uint32_t *keys, uint32_t best, uint32_t second, int n_select,
                                                 int lane, WideRankScratch &scratch, int32_t &id_out) {
    scratch.bound[lane] = bound_candidate_of_64(best, lane);
    scratch.bound[lane + 32] = bound_candidate_of_64(second, lane + 32);
    __syncwarp();
    const uint32_t mine_best = scratch.bound[lane], mine_second = scratch.bound[lane + 32];
    uint32_t above_best = 0, above_second = 0;  // values below 2^31: a difference's sign compares them
    const uint4 *quads = reinterpret_cast<const uint4 *>(scratch.bound);
#pragma unroll 4
    for (int q = 0; q < 16; ++q) {
        const uint4 c = quads[q];
        above_best += ((mine_best - c.x) >> 31) + ((mine_best - c.y) >> 31) + ((mine_best - c.z) >> 31) +
                      ((mine_best - c.w) >> 31);
        above_second += ((mine_second - c.x) >> 31) + ((mine_second - c.y) >> 31) + ((mine_second - c.z) >> 31) +
                        ((mine_second - c.w) >> 31);
    }
    const uint32_t n_above = static_cast<uint32_t>(n_select - 1);
    const uint32_t holds_best = __ballot_sync(kFullMask, above_best == n_above);
    const uint32_t holds_second = __ballot_sync(kFullMask, above_second == n_above);
    const uint32_t bound = holds_best ? __shfl_sync(kFullMask, mine_best, __ffs(holds_best) - 1)
                                      : __shfl_sync(kFullMask, mine_second, __ffs(holds_second) - 1);
    // Slots past the row (kNoCandidateKey) never reach it.
    const uint32_t threshold = max((bound & ~63u) << 1, kNanKey);
    int32_t count = 0;
#pragma unroll 4
    for (int i = 0; i < S; ++i) count += keys[i * 32 + lane] >= threshold ? 1 : 0;
    const int32_t inclusive = warp_inclusive_sum(count, lane);
    const int32_t gathered = __shfl_sync(kFullMask, inclusive, 31);
    if (gathered > 64) {
        rank_staged_by_rounds<S>(keys, n_select, lane, id_out);
        return;
    }
    int32_t at = inclusive - count;
#pragma unroll 4
    for (int i = 0; i < S; ++i) {
        const uint32_t key = keys[i * 32 + lane];
        if (key >= threshold) scratch.gathered[at++] = rank_value(key, i * 32 + lane);
    }
    for (int j = gathered + lane; j < 64; j += 32) scratch.gathered[j] = 0u;  // below every candidate
    __syncwarp();
    const uint64_t first = scratch.gathered[lane], last = scratch.gathered[lane + 32];
    int rank_first = 0, rank_last = 0;
#pragma unroll 1
    for (int j = 0; j < gathered; j += 8) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const uint64_t c = scratch.gathered[j + i];
            rank_first = add_if_greater(rank_first, c, first);
            rank_last = add_if_greater(rank_last, c, last);
        }
    }
    if (lane < gathered && rank_first < n_select) scratch.chosen[rank_first] = first;
    if (lane + 32 < gathered && rank_last < n_select) scratch.chosen[rank_last] = last;
    __syncwarp();
    if (lane < n_select) id_out = rank_id(static_cast<uint32_t>(scratch.chosen[lane]));
    __syncwarp();  // the scratch is reused by the warp's next token
}

// Redundant experts: the physical expert of pair `pair`'s logical expert
// id >= 0, replica pair % replica_count[id] (vLLM's rule), or -1 (a pair
// of no expert) where the count or the entry is out of range; the tables
// are read only inside them.
__device__ __forceinline__ int32_t physical_expert(const RouteArgs &a, int32_t pair, int32_t id) {
    const int32_t count = __ldg(a.replica_count + id);
    if (count < 1 || count > a.replica_slots) return -1;
    const int32_t q = __ldg(a.logical_to_physical + static_cast<int64_t>(id) * a.replica_slots + pair % count);
    return q >= 0 && q < a.physical_experts ? q : -1;
}

// A chosen token's weights and outputs: lane j < k writes pair j's id
// (id, the shared expert added here; with redundant experts its physical
// expert, counted in the load) and weight. A hashed pair of no expert
// (id -1) weighs 0 and counts in no renormalization.
template <bool kShared>
__device__ __forceinline__ void write_token(const RouteArgs &a, const char *row, int32_t t, int32_t id, int lane) {
    const RankedExperts r = ranked_experts<kShared>(a);
    const int k = a.top_k;
    if (kShared && lane == k - 1) id = r.shared_id;
    const bool active = lane < k;
    const bool weighed = active && id >= 0;
    const float x = weighed ? load_logit<true>(a, row, id) : 0.0f;
    float w = (a.flags & (kFlagSigmoid | kFlagSqrtSoftplus | kFlagNoRenormalize)) == kFlagNoRenormalize
                  ? wide_full_row_softmax(a, row, lane, x, weighed)
                  : wide_chosen_weight(a, x, weighed);
    if (a.scale != 1.0f) w *= a.scale;
    if (a.flags & kFlagSqrtSoftplus) w = fminf(w, FLT_MAX);
    if (active) {
        const int64_t pair = static_cast<int64_t>(t) * k + lane;  // below 2^31 (router creation checks)
        if ((a.flags & kFlagRedundantExperts) && id >= 0) {
            id = physical_expert(a, static_cast<int32_t>(pair), id);
            if (id >= 0 && a.physical_load) atomicAdd(a.physical_load + id, 1);
        }
        a.topk_ids[pair] = id;
        a.topk_weights[pair] = w;
    }
}

// Ranks and writes the warp's tokens. key_of(x, e): expert e's key of
// logit x.
template <int S, bool kShared, class Key>
__device__ __forceinline__ void wide_select_tokens_keyed(const RouteArgs &a, WideShared &sh, TokenRange range,
                                                         int warp, int lane, Key key_of) {
    const RankedExperts r = ranked_experts<kShared>(a);
    uint32_t *keys = reinterpret_cast<uint32_t *>(sh.warp_counts[warp]);
    for (int32_t t = range.begin; t < range.end; ++t) {
        const char *row = token_row<true>(a, t);
        uint32_t best, second;
        stage_keys<S>(a, row, r.n_candidates, lane, keys, best, second, key_of);
        if (!kShared && a.num_groups > 1) wide_keep_best_groups<S>(a, keys, lane, best, second);  // no groups with it
        int32_t id = -1;
        wide_rank_staged<S>(keys, best, second, r.n_select, lane, sh.rank[warp], id);
        write_token<kShared>(a, row, t, id, lane);
        __syncwarp();  // the row is the next token's
    }
}

// Hash routing: writes the warp's tokens, lane j < k taking pair j's
// expert from the table row of the token's id: -1, a pair of no expert,
// for an id outside [0, vocab_size) or an entry outside [0, E); the table
// is read only inside its rows. The ids of 32 tokens load at once, and
// the next token's entry while the current one is weighed, so a token
// waits on one memory round trip, its logit's
// (e384-m4096-k6-bm64-deepseek-v4-hash). The warp's first row heads for
// L2 while its id and entry load, so a lone token's logit is an L2 hit
// (e384-m1-k6-bm64-deepseek-v4-hash).
__device__ __forceinline__ void wide_hash_tokens(const RouteArgs &a, TokenRange range, int lane) {
    const int k = a.top_k;
    if (range.begin < range.end) {
        const char *row = token_row<true>(a, range.begin);
        const int32_t row_bytes = a.num_experts * (a.logits_type == kLogitsF32 ? 4 : 2);
        for (int32_t at = lane * 128; at < row_bytes + 127; at += 32 * 128)  // and the line of its last byte
            asm volatile("prefetch.global.L2 [%0];" ::"l"(row + min(at, row_bytes - 1)));
    }
    for (int32_t chunk = range.begin; chunk < range.end; chunk += 32) {
        const int n = min(32, range.end - chunk);
        const int32_t mine = lane < n ? __ldg(a.token_ids + chunk + lane) : -1;
        const auto entry_of = [&](int i) {  // unchecked: the load is waited for only when used
            const int32_t v = __shfl_sync(kFullMask, mine, i);
            return lane < k && v >= 0 && v < a.vocab_size ? __ldg(a.hash_table + static_cast<int64_t>(v) * k + lane)
                                                          : -1;
        };
        int32_t next = entry_of(0);
        for (int i = 0; i < n; ++i) {
            const int32_t entry = next;
            if (i + 1 < n) next = entry_of(i + 1);
            const int32_t id = entry >= 0 && entry < a.num_experts ? entry : -1;
            write_token<false>(a, token_row<true>(a, chunk + i), chunk + i, id, lane);
        }
    }
}

// The plan's id of a pair's expert id: -1 for a pair of no expert.
__device__ __forceinline__ int32_t pair_local_expert(const RouteArgs &a, int32_t id) {
    return id >= 0 ? local_expert(a, id) : -1;
}

// Ranks (or hashes) and writes the warp's tokens, then counts their pairs
// per local expert in the warp's row (which held the keys until then),
// reading back the ids each lane wrote. One scoring's key code a call.
template <int S, bool kShared>
__device__ __forceinline__ void wide_select_tokens(const RouteArgs &a, WideShared &sh, TokenRange range, int warp,
                                                   int lane) {
    const float *bias = sh.bias;
    if (!kShared && (a.flags & kFlagHashRouting))  // no shared expert with hash routing
        wide_hash_tokens(a, range, lane);
    else if (!(a.flags & kFlagCorrectionBias))
        wide_select_tokens_keyed<S, kShared>(a, sh, range, warp, lane, [](float x, int) { return ordered_key(x); });
    else if (a.flags & kFlagSqrtSoftplus)
        wide_select_tokens_keyed<S, kShared>(a, sh, range, warp, lane, [bias](float x, int e) {
            return ordered_key(alphamoe_biased_score(alphamoe_sqrt_softplus(x), bias[e]));
        });
    else
        wide_select_tokens_keyed<S, kShared>(a, sh, range, warp, lane, [bias](float x, int e) {
            return ordered_key(alphamoe_biased_score(alphamoe_sigmoid(x), bias[e]));
        });
    int4 *row = reinterpret_cast<int4 *>(sh.warp_counts[warp]);
    for (int q = lane; q < (a.plan_experts + 3) / 4; q += 32) row[q] = make_int4(0, 0, 0, 0);
    __syncwarp();
    const int k = a.top_k;
    for (int32_t t = range.begin; t < range.end; ++t) {
        if (lane < k) {
            const int32_t local = pair_local_expert(a, a.topk_ids[static_cast<int64_t>(t) * k + lane]);
            if (local >= 0) atomicAdd(&sh.warp_counts[warp][local], 1);
        }
    }
}

// Every thread of the grid: turns each CTA's counts (sh.total, per
// expert) into the pairs of earlier CTAs (sh.before) and the call's totals
// (sh.total), through the count table: each CTA publishes its row; after a
// grid barrier CTA c scans the columns of its slice of experts, writing
// each row's exclusive prefix back in place and the totals into row
// gridDim.x; after a second barrier each CTA reads its row and the totals.
// A column's CTAs are split over a group of Z lanes, 8 rows a lane. Up to
// kWideOneBarrierCtas CTAs read every row after the first barrier instead.
__device__ __forceinline__ void wide_exchange(const RouteArgs &a, WideShared &sh) {
    const int L = a.plan_experts;
    const int G = static_cast<int>(gridDim.x);
    int32_t *table = reinterpret_cast<int32_t *>(a.workspace + kWsCountTableWord);
    for (int e = threadIdx.x; e < L; e += kBlockThreads) __stcg(table + blockIdx.x * L + e, sh.total[e]);
    grid_barrier(a.workspace + kWsBarrierWord, gridDim.x);
    // A grid of a few CTAs: each sums every row itself, which costs less
    // than a second barrier (e896-m128-k16-bm64-kimi-k3, 8 CTAs).
    if (G <= kWideOneBarrierCtas) {
        for (int e = threadIdx.x; e < L; e += kBlockThreads) {
            int32_t total = 0, before = 0;
            for (int c = 0; c < G; ++c) {
                const int32_t v = __ldcg(table + c * L + e);
                total += v;
                before += c < static_cast<int>(blockIdx.x) ? v : 0;
            }
            sh.total[e] = total;
            sh.before[e] = before;
        }
        __syncthreads();
        return;
    }
    constexpr int kRowsPerLane = 8;
    int z = 1;
    while (z * kRowsPerLane < G) z <<= 1;  // G <= kWideMaxGridCtas < 32 * 8
    const int slice = (L + G - 1) / G;
    const int first = blockIdx.x * slice;
    const int last = min(L, first + slice);
    const int member = threadIdx.x & (z - 1);
    const int groups = kBlockThreads / z;
    for (int base = 0; base < slice; base += groups) {  // the same trips in every lane of a warp
        const int e = first + base + static_cast<int>(threadIdx.x) / z;
        const bool mine = e < last;
        int32_t v[kRowsPerLane];
        int32_t sum = 0;
#pragma unroll
        for (int i = 0; i < kRowsPerLane; ++i) {
            const int c = member * kRowsPerLane + i;
            v[i] = mine && c < G ? __ldcg(table + c * L + e) : 0;
            sum += v[i];
        }
        // The exclusive prefix of the lane's sum over its group of z lanes.
        int32_t inclusive = sum;
        for (int offset = 1; offset < z; offset <<= 1) {
            const int32_t up = __shfl_up_sync(kFullMask, inclusive, offset, z);
            if (member >= offset) inclusive += up;
        }
        int32_t running = inclusive - sum;
#pragma unroll
        for (int i = 0; i < kRowsPerLane; ++i) {
            const int c = member * kRowsPerLane + i;
            if (mine && c < G) __stcg(table + c * L + e, running);
            running += v[i];
        }
        if (mine && member == z - 1) __stcg(table + G * L + e, running);
    }
    grid_barrier(a.workspace + kWsBarrierWord, gridDim.x);
    for (int e = threadIdx.x; e < L; e += kBlockThreads) {
        sh.before[e] = __ldcg(table + blockIdx.x * L + e);
        sh.total[e] = __ldcg(table + G * L + e);
    }
    __syncthreads();
}

// The CTA's warps that hold tokens (warp_token_range gives the others none):
// only their rows of counts are read, so a CTA of a few tokens scans a few
// rows, not one a warp (e896-m1-k16-bm64-kimi-k3).
__device__ __forceinline__ int warps_with_tokens(TokenRange cta) {
    const int n = cta.end - cta.begin;
    const int per_warp = (n + kWarpsPerBlock - 1) / kWarpsPerBlock;
    return per_warp > 0 ? (n + per_warp - 1) / per_warp : 0;
}

// The local expert whose padded group holds plan position pos < live: the
// last e with offset[e] <= pos (groups of no pairs take no room).
__device__ __forceinline__ int expert_at(const WideShared &sh, int L, int32_t pos) {
    int lo = 0, hi = L;  // offset[lo] <= pos < offset[hi]
    while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (sh.offset[mid] <= pos) lo = mid;
        else hi = mid;
    }
    return lo;
}

template <class Variant, int kSlots>
__device__ __forceinline__ void route_wide(const RouteArgs &a) {
    WideShared &sh = wide_shared();
    wait_for_preceding_kernel();
    if (route_empty_call(a)) {
        allow_dependent_launch();
        return;
    }
    const int L = a.plan_experts;
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    if (a.flags & kFlagCorrectionBias)
        for (int e = threadIdx.x; e < a.num_experts; e += kBlockThreads) sh.bias[e] = __ldg(a.correction_bias + e);
    __syncthreads();
    // The warp's tokens, worked out again for the placement: kept live
    // across the ranking of rows of 64 slots they would spill on sm_100a.
    const auto warp_tokens = [&] { return warp_token_range(cta_token_range(a, blockIdx.x), threadIdx.x >> 5); };
    wide_select_tokens<kSlots, kSharedExpert>(a, sh, warp_tokens(), warp, lane);
    allow_dependent_launch();
    __syncthreads();
    // The warps' counts as exclusive prefixes over the CTA's warps.
    const int active_warps = warps_with_tokens(cta_token_range(a, blockIdx.x));
    for (int e = threadIdx.x; e < L; e += kBlockThreads) {
        int32_t running = 0;
#pragma unroll 4
        for (int w = 0; w < active_warps; ++w) {
            const int32_t c = sh.warp_counts[w][e];
            sh.warp_counts[w][e] = running;
            running += c;
        }
        sh.total[e] = running;
        sh.before[e] = 0;
    }
    __syncthreads();
    if (gridDim.x > 1) wide_exchange(a, sh);  // uniform: the grid's size
    // Padded group starts: thread i scans experts 4i .. 4i + 3.
    constexpr int kPerThread = kWideMaxExperts / kBlockThreads;
    int32_t padded[kPerThread], sum = 0;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int e = threadIdx.x * kPerThread + i;
        // ceil(total / block_m) blocks, with no sum past INT32_MAX on the way.
        const int32_t total = e < L ? sh.total[e] : 0;
        const int32_t blocks = block_m_divide(a, total);
        padded[i] = (blocks + (blocks * a.block_m != total ? 1 : 0)) * a.block_m;
        sum += padded[i];
    }
    int32_t live;
    int32_t at = block_exclusive_scan(sum, sh.scan_scratch, &live);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int e = threadIdx.x * kPerThread + i;
        if (e < L) sh.offset[e] = at;
        at += padded[i];
    }
    if (threadIdx.x == 0) sh.offset[L] = live;
    __syncthreads();
    for (int e = threadIdx.x; e < L; e += kBlockThreads) {
        const int32_t base = sh.offset[e] + sh.before[e];
#pragma unroll 4
        for (int w = 0; w < active_warps; ++w) sh.warp_counts[w][e] += base;
    }
    if (blockIdx.x == 0) {
        for (int e = threadIdx.x; e < L; e += kBlockThreads) {
            if (a.expert_counts) a.expert_counts[e] = sh.total[e];
            if (a.expert_offsets) a.expert_offsets[e] = sh.offset[e];
        }
        if (threadIdx.x == 0) {
            if (a.expert_offsets) a.expert_offsets[L] = live;
            *a.num_tokens_post_padded = live;
        }
    }
    // Padding, block experts and the tail, over the grid. Positions step
    // in 64 bits: a plan may end within a stride of INT32_MAX.
    const int32_t sentinel = a.num_tokens * a.top_k;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlockThreads;
    const int64_t first_pos = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
    for (int64_t at = first_pos; at < live; at += stride) {
        const int32_t pos = static_cast<int32_t>(at);
        const int e = expert_at(sh, L, pos);
        if (pos - sh.offset[e] >= sh.total[e]) a.sorted_token_ids[pos] = sentinel;
        const int32_t block = block_m_divide(a, pos);
        if (block * a.block_m == pos) a.expert_ids[block] = e;
    }
    if (a.flags & kFlagTailFill) {
        for (int64_t at = live + first_pos; at < a.capacity; at += stride) {
            const int32_t pos = static_cast<int32_t>(at);
            a.sorted_token_ids[pos] = sentinel;
            const int32_t block = block_m_divide(a, pos);
            if (block * a.block_m == pos) a.expert_ids[block] = -1;
        }
    }
    __syncthreads();
    // Placement: the warp's pairs in order; pairs of one token that share a
    // local expert (an expert map, a hash table's repeated entry) take
    // consecutive places in lane order.
    const int k = a.top_k;
    const TokenRange warp_range = warp_tokens();
    for (int32_t t = warp_range.begin; t < warp_range.end; ++t) {
        const int64_t pair = static_cast<int64_t>(t) * k + lane;
        const bool active = lane < k;
        const int32_t local = active ? pair_local_expert(a, a.topk_ids[pair]) : -1;
        const unsigned peers = __match_any_sync(kFullMask, local >= 0 ? local : -1 - lane);
        const int rank = __popc(peers & ((1u << lane) - 1u));
        int32_t pos = -1;
        if (local >= 0) {
            pos = sh.warp_counts[warp][local] + rank;
            a.sorted_token_ids[pos] = static_cast<int32_t>(pair);
        }
        if (active && a.pair_to_sorted) a.pair_to_sorted[pair] = pos;
        __syncwarp();
        if (local >= 0 && rank == 0) sh.warp_counts[warp][local] += __popc(peers);
        __syncwarp();
    }
}

// The three specializations of variants.def: one CTA, or a co-resident grid.
template <class Variant, int kSlots>
__device__ __forceinline__ void tiny(const RouteArgs &a) {
    route_wide<Variant, kSlots>(a);
}
template <class Variant, int kSlots>
__device__ __forceinline__ void small(const RouteArgs &a) {
    route_wide<Variant, kSlots>(a);
}
template <class Variant, int kSlots>
__device__ __forceinline__ void large(const RouteArgs &a) {
    route_wide<Variant, kSlots>(a);
}

}  // namespace
