// The wide kernels (routing 3 in variants.def): rows of more than
// kMaxExperts experts (up to kWideMaxExperts) or more than kMaxTopK chosen
// a token (up to kWideMaxTopK), every hash-routing call and every call of
// redundant experts, every routing flavour, in one body for the three
// specializations: tiny is one CTA, small and large a cooperative grid
// that the host sizes. The narrow kernels' plans keep a thread per expert
// and 16-bit ids; here a warp ranks a token from its row of dynamic shared
// memory (or takes its experts from the hash table), the same row then
// counts its pairs per expert, and the grid turns the counts into
// positions by group sums where the plan's experts are at most
// kMaxExperts (wide_exchange_by_group_sums), else through the count table
// (wide_exchange).
//
// Order inside an expert's group is ascending pair index, as in every
// kernel: a warp owns a contiguous run of tokens, its counts become
// exclusive prefixes over warps, CTAs and experts, and it replays its
// tokens in order.
#include <float.h>
#include <stddef.h>

#include "common/dependent_launch.cuh"
#include "common/entry_point.cuh"
#include "common/flavour.cuh"
#include "common/grid_barrier.cuh"
#include "common/group_sums_exchange.cuh"
#include "common/phase_clock.cuh"
#include "common/route_cta.cuh"

using namespace alphamoe;

namespace {

static_assert(kWarpsPerBlock * 32 == kBlockThreads, "a warp a token in flight");

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
    int32_t total[kWideMaxExperts];       // pairs per expert over the call
    int32_t before[kWideMaxExperts];      // pairs per expert in earlier CTAs
    int32_t offset[kWideMaxExperts + 1];  // padded group starts; [L] = live length
    WideRankScratch rank[kWarpsPerBlock];
    int32_t scan_scratch[kWarpsPerBlock];
};
static_assert(sizeof(WideShared) <= kWideSharedBytes, "the host reserves the CTA's shared memory");
static_assert(offsetof(WideShared, total) % 16 == 0 && offsetof(WideShared, before) % 16 == 0 &&
                  offsetof(WideShared, offset) % 16 == 0,
              "route_wide reads four experts at once");

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
// sum run over every logit of the row, the shared column included. Out of
// line, as the rare paths below: every SM fetches the code a warp runs
// through, and these lay between its hot loops (e2048-m2048-k32-bm64).
__device__ __noinline__ float wide_full_row_softmax(const char *row, int num_experts, int32_t logits_type, int lane,
                                                    float x, bool active) {
    const auto load = [&](int e) {
        return logits_type == kLogitsF32 ? load_streamed(reinterpret_cast<const float *>(row) + e)
                                         : half_to_float(load_streamed(reinterpret_cast<const unsigned short *>(row) + e),
                                                         logits_type);
    };
    float m = -INFINITY;
    uint32_t n_inf = 0;
    for (int e = lane; e < num_experts; e += 32) {
        const float v = load(e);
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
    for (int e = lane; e < num_experts; e += 32) {
        const float v = load(e);
        if (!isnan(v)) sum += expf(v - m);
    }
    sum = sum_of_32_lanes(sum);
    return active && !isnan(x) ? expf(x - m) / sum : 0.0f;
}

// A token's logits into the warp's row of shared memory, slot i of lane l
// (expert 32 i + l) at word 32 i + l; 16-bit logits widened to fp32 bits.
// Words past the candidates are left undefined (stage_keys fills them).
// A row of fp32 logits lies there as it lies in memory: copied
// asynchronously, every slot's load is in flight at once and none holds a
// register, where loads into registers went in two halves, the second
// issued once the first had arrived (e2048-m2048-k32-bm64).
template <int S>
__device__ __forceinline__ void stage_row(const RouteArgs &a, const char *row, int n_candidates, int lane,
                                          uint32_t *keys) {
    if (a.logits_type == kLogitsF32) {
        const float *logits = reinterpret_cast<const float *>(row);
        const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(keys));
        if ((reinterpret_cast<uintptr_t>(row) & 15u) == 0) {
            // A 16-byte aligned row in 16-byte pieces, a quarter of the
            // copies; the last piece reads only the row's words and zeroes
            // the rest (e2048-m2048-k32-bm64). A lane's slots come from
            // other lanes' pieces: the warp syncs once they have landed.
            static_assert(S % 4 == 0, "a lane's pieces are four slots");
#pragma unroll 4
            for (int i = 0; i < S / 4; ++i) {
                const int e = 4 * (i * 32 + lane);
                if (e < n_candidates) {
                    const uint32_t bytes = 4u * static_cast<uint32_t>(min(4, n_candidates - e));
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(to + 4u * e), "l"(logits + e),
                                 "r"(bytes)
                                 : "memory");
                }
            }
        } else {
#pragma unroll 8
            for (int i = 0; i < S; ++i) {
                const int e = i * 32 + lane;
                if (e < n_candidates)
                    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(to + 4u * e), "l"(logits + e)
                                 : "memory");
            }
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncwarp();
        return;
    }
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
}

// A token's keys in the warp's row (stage_row; contract: the logits, or
// with a correction bias fl(score + b); kNoCandidateKey past the
// candidates), and each lane's best two. The keys are formed in a rolled
// loop: a warp ranking one token runs every instruction it fetches many
// times, where unrolled slots are fetched one after the other
// (e896-m1-k16-bm64-kimi-k3).
template <int S, class Key>
__device__ __forceinline__ void stage_keys(const RouteArgs &a, const char *row, int n_candidates, int lane,
                                           uint32_t *keys, uint32_t &best, uint32_t &second, Key key_of) {
    stage_row<S>(a, row, n_candidates, lane, keys);
    best = second = kNoCandidateKey;
    // The lane's candidates are its first `mine` slots: no bound per slot.
    const int mine = n_candidates > lane ? min(S, (n_candidates - lane + 31) >> 5) : 0;
#pragma unroll 2
    for (int i = 0; i < mine; ++i) {
        const int e = i * 32 + lane;
        const uint32_t key = key_of(__uint_as_float(keys[e]), e);
        keys[e] = key;
        second = max(second, min(best, key));
        best = max(best, key);
    }
    for (int i = mine; i < S; ++i) keys[i * 32 + lane] = kNoCandidateKey;
}

// wide_rank_staged's general rounds (many equal keys): each round the
// warp's largest key wins, the lower id on ties, and the winner's lane
// finds its next best in its slots of the row. Returns id_out, with lane
// r < n_select's set to the r-th expert (a value, not a reference, out of
// line).
template <int S>
__device__ __noinline__ int32_t rank_staged_by_rounds(uint32_t *keys, int n_select, int lane, int32_t id_out) {
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
    return id_out;
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
    __syncwarp();  // a group's lanes read the keys other lanes staged
    for (int g = 0; g < groups; ++g) {
        uint32_t b = kNoCandidateKey, s = kNoCandidateKey;
        for (int e = g * size + lane; e < (g + 1) * size; e += 32) merge_best_two(b, s, keys[e], kNoCandidateKey);
        const uint32_t score = group_score(b, s, pair_sum, lane);
        if (lane == g) my_group = score;
    }
    const uint32_t kept = best_groups(my_group, groups, a.topk_groups, lane);
    __syncwarp();  // and those reads end before a lane drops its own keys
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

// The n-th largest (1 <= n <= 64) of 64 bound candidates in shared memory
// (bound_candidate_of_64: distinct, below 2^31), in every lane: lane l
// counts the candidates above its two, l and l + 32.
__device__ __forceinline__ uint32_t nth_largest_of_64(const uint32_t *candidates, int n, int lane) {
    const uint32_t mine_best = candidates[lane], mine_second = candidates[lane + 32];
    uint32_t above_best = 0, above_second = 0;  // values below 2^31: a difference's sign compares them
    const uint4 *quads = reinterpret_cast<const uint4 *>(candidates);
#pragma unroll 4
    for (int q = 0; q < 16; ++q) {
        const uint4 c = quads[q];
        above_best += ((mine_best - c.x) >> 31) + ((mine_best - c.y) >> 31) + ((mine_best - c.z) >> 31) +
                      ((mine_best - c.w) >> 31);
        above_second += ((mine_second - c.x) >> 31) + ((mine_second - c.y) >> 31) + ((mine_second - c.z) >> 31) +
                        ((mine_second - c.w) >> 31);
    }
    const uint32_t n_above = static_cast<uint32_t>(n - 1);
    const uint32_t holds_best = __ballot_sync(kFullMask, above_best == n_above);
    const uint32_t holds_second = __ballot_sync(kFullMask, above_second == n_above);
    return holds_best ? __shfl_sync(kFullMask, mine_best, __ffs(holds_best) - 1)
                      : __shfl_sync(kFullMask, mine_second, __ffs(holds_second) - 1);
}

// The keys at or above which a row's n largest lie, from the n-th largest
// of 64 bound candidates, each the key of a distinct expert. Slots past
// the row (kNoCandidateKey) never reach it.
__device__ __forceinline__ uint32_t threshold_of_bound(uint32_t bound) { return max((bound & ~63u) << 1, kNanKey); }

// Ranks up to 64 gathered candidates (rank values, scratch.gathered) by
// counting: lane r < n_select receives the r-th's id.
__device__ __forceinline__ void rank_gathered_64(WideRankScratch &scratch, int gathered, int n_select, int lane,
                                                 int32_t &id_out) {
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

// The ranking of a staged row (stage_keys): lane r < n_select receives the
// r-th expert (its position in the row). warp_rank_keys's method with the
// bound from the lanes' best two keys: 64 keys of distinct experts, so
// their n-th largest bounds the row's for n <= 32, where the lanes' best
// keys alone leave too many candidates at k = 32 (e2048-m2048-k32-bm64).
// Up to 64 candidates, two a lane, are ranked by counting; more (many
// equal keys) take the rounds. The pass that counts the candidates marks
// their slots, a bit each, and the gathering visits the marked slots
// only, about two a lane, not every slot again (e2048-m2048-k32-bm64).
template <int S>
__device__ __forceinline__ void wide_rank_staged(uint32_t *keys, uint32_t best, uint32_t second, int n_select,
                                                 int lane, WideRankScratch &scratch, int32_t &id_out) {
    constexpr int kWords = (S + 31) / 32;
    scratch.bound[lane] = bound_candidate_of_64(best, lane);
    scratch.bound[lane + 32] = bound_candidate_of_64(second, lane + 32);
    __syncwarp();
    const uint32_t threshold = threshold_of_bound(nth_largest_of_64(scratch.bound, n_select, lane));
    uint32_t marked[kWords];  // bit j of word w: slot 32 w + j reaches the threshold
    int32_t count = 0;
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
        uint32_t bits = 0;
#pragma unroll 8
        for (int j = 0; j < (S < 32 ? S : 32); ++j)
            bits |= (keys[(32 * w + j) * 32 + lane] >= threshold ? 1u : 0u) << j;
        marked[w] = bits;
        count += __popc(bits);
    }
    const int32_t inclusive = warp_inclusive_sum(count, lane);
    const int32_t gathered = __shfl_sync(kFullMask, inclusive, 31);
    if (gathered > 64) {
        id_out = rank_staged_by_rounds<S>(keys, n_select, lane, id_out);
        return;
    }
    int32_t at = inclusive - count;
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
        for (uint32_t bits = marked[w]; bits != 0; bits &= bits - 1) {
            const int e = (32 * w + __ffs(bits) - 1) * 32 + lane;
            scratch.gathered[at++] = rank_value(keys[e], e);
        }
    }
    rank_gathered_64(scratch, gathered, n_select, lane, id_out);
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
// (id; with redundant experts its physical expert, counted in the load)
// and weight from its logit x, and returns that id (-1 in lanes past k). A
// hashed pair of no expert (id -1) weighs 0 and counts in no
// renormalization.
__device__ __forceinline__ int32_t write_token_of_logits(const RouteArgs &a, const char *row, int32_t t, int32_t id,
                                                         int lane, float x) {
    const int k = a.top_k;
    const bool active = lane < k;
    const bool weighed = active && id >= 0;
    float w = (a.flags & (kFlagSigmoid | kFlagSqrtSoftplus | kFlagNoRenormalize)) == kFlagNoRenormalize
                  ? wide_full_row_softmax(row, a.num_experts, a.logits_type, lane, x, weighed)
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
    return active ? id : -1;
}

// write_token_of_logits for a ranked token, the shared expert added here,
// each logit loaded from the row.
template <bool kShared>
__device__ __forceinline__ int32_t write_token(const RouteArgs &a, const char *row, int32_t t, int32_t id, int lane) {
    if (kShared && lane == a.top_k - 1) id = ranked_experts<kShared>(a).shared_id;
    const bool weighed = lane < a.top_k && id >= 0;
    return write_token_of_logits(a, row, t, id, lane, weighed ? load_logit<true>(a, row, id) : 0.0f);
}

// Ranks and writes the warp's tokens; returns the id lane j wrote for
// pair j of the last (write_token; -1 for no token). key_of(x, e): expert
// e's key of logit x.
template <int S, bool kShared, class Key>
__device__ __forceinline__ int32_t wide_select_tokens_keyed(const RouteArgs &a, WideShared &sh, TokenRange range,
                                                            int warp, int lane, Key key_of) {
    const RankedExperts r = ranked_experts<kShared>(a);
    uint32_t *keys = reinterpret_cast<uint32_t *>(sh.warp_counts[warp]);
    int32_t written = -1;
    for (int32_t t = range.begin; t < range.end; ++t) {
        const char *row = token_row<true>(a, t);
        uint32_t best, second;
        stage_keys<S>(a, row, r.n_candidates, lane, keys, best, second, key_of);
        if (!kShared && a.num_groups > 1) wide_keep_best_groups<S>(a, keys, lane, best, second);  // no groups with it
        int32_t id = -1;
        wide_rank_staged<S>(keys, best, second, r.n_select, lane, sh.rank[warp], id);
        written = write_token<kShared>(a, row, t, id, lane);
        __syncwarp();  // the row is the next token's
    }
    return written;
}

// Entry j < k of the hash table's row of token id v, unchecked (a load is
// waited for only where its value is used), or -1 for j >= k or an id
// outside [0, vocab_size): the table is read only inside its rows.
__device__ __forceinline__ int32_t hash_entry(const RouteArgs &a, int32_t v, int j) {
    const int k = a.top_k;
    return j < k && v >= 0 && v < a.vocab_size ? __ldg(a.hash_table + static_cast<int64_t>(v) * k + j) : -1;
}

// The expert of a table entry: -1, a pair of no expert, outside [0, E).
__device__ __forceinline__ int32_t hashed_expert(const RouteArgs &a, int32_t entry) {
    return entry >= 0 && entry < a.num_experts ? entry : -1;
}

// The plan's id of a pair's expert id: -1 for a pair of no expert.
__device__ __forceinline__ int32_t pair_local_expert(const RouteArgs &a, int32_t id) {
    return id >= 0 ? local_expert(a, id) : -1;
}

// Hash routing: writes the warp's tokens, lane j < k taking pair j's
// expert from the table row of the token's id (-1, a pair of no expert,
// for an id outside [0, vocab_size) or an entry outside [0, E)), and
// counts them in the warp's row. The pairs of up to kHashChunkPairs load
// together, the tokens' ids, then every pair's entry, then every pair's
// logit, into the warp's ranking scratch: a chunk waits on three memory
// round trips, where a token at a time waited on its own logit's and a
// second pass read its ids back (e384-m4096-k6-bm64-deepseek-v4-hash).
constexpr int kHashChunkPairs = 4 * 32;
__device__ __forceinline__ void wide_hash_tokens(const RouteArgs &a, WideShared &sh, TokenRange range, int warp,
                                                 int lane) {
    static_assert(2 * kHashChunkPairs * sizeof(int32_t) <= sizeof(WideRankScratch), "a chunk's ids and logits");
    int32_t *staged_id = reinterpret_cast<int32_t *>(&sh.rank[warp]);
    float *staged_logit = reinterpret_cast<float *>(staged_id + kHashChunkPairs);
    const int k = a.top_k;
    const int per_chunk = min(32, kHashChunkPairs / k);
    const uint32_t inverse_k = (0x10000u + k - 1) / k;  // p / k = p * inverse_k >> 16 for p < 1024, k <= 32
    for (int32_t chunk = range.begin; chunk < range.end; chunk += per_chunk) {
        const int n = min(per_chunk, range.end - chunk);
        const int pairs = n * k;
        const int32_t mine = lane < n ? __ldg(a.token_ids + chunk + lane) : -1;
        int32_t id[kHashChunkPairs / 32];
        int token[kHashChunkPairs / 32];
#pragma unroll
        for (int b = 0; b < kHashChunkPairs / 32; ++b) {
            const int p = 32 * b + lane;
            token[b] = static_cast<int>((static_cast<uint32_t>(p) * inverse_k) >> 16);
            const int32_t v = __shfl_sync(kFullMask, mine, token[b] & 31);
            id[b] = p < pairs ? hash_entry(a, v, p - token[b] * k) : -1;
        }
        float x[kHashChunkPairs / 32];
#pragma unroll
        for (int b = 0; b < kHashChunkPairs / 32; ++b) {
            id[b] = hashed_expert(a, id[b]);
            x[b] = id[b] >= 0 ? load_logit<true>(a, token_row<true>(a, chunk + token[b]), id[b]) : 0.0f;
        }
#pragma unroll
        for (int b = 0; b < kHashChunkPairs / 32; ++b) {
            const int p = 32 * b + lane;
            if (p < pairs) {
                staged_id[p] = id[b];
                staged_logit[p] = x[b];
            }
        }
        __syncwarp();
        for (int i = 0; i < n; ++i) {
            const int p = i * k + lane;  // below kHashChunkPairs where lane < k
            const int32_t written = write_token_of_logits(a, token_row<true>(a, chunk + i), chunk + i,
                                                          lane < k ? staged_id[p] : -1, lane,
                                                          lane < k ? staged_logit[p] : 0.0f);
            const int32_t local = pair_local_expert(a, written);
            if (local >= 0) atomicAdd(&sh.warp_counts[warp][local], 1);
        }
        __syncwarp();  // the scratch is the next chunk's
    }
}

// Ranks (or, in the hashed entry points, hashes) and writes the warp's
// tokens, then counts their pairs per local expert in the warp's row
// (which held the keys until then), reading back the ids each lane wrote;
// hashed tokens count as they are written. One scoring's key code a call.
template <int S, bool kShared, bool kHashed>
__device__ __forceinline__ void wide_select_tokens(const RouteArgs &a, WideShared &sh, TokenRange range, int warp,
                                                   int lane) {
    const auto clear_row = [&] {
        int4 *row = reinterpret_cast<int4 *>(sh.warp_counts[warp]);
        for (int q = lane; q < (a.plan_experts + 3) / 4; q += 32) row[q] = make_int4(0, 0, 0, 0);
        __syncwarp();
    };
    if constexpr (kHashed) {
        clear_row();
        wide_hash_tokens(a, sh, range, warp, lane);
    } else {
        const float *bias = sh.bias;
        int32_t last;
        if (!(a.flags & kFlagCorrectionBias))
            last = wide_select_tokens_keyed<S, kShared>(a, sh, range, warp, lane,
                                                        [](float x, int) { return ordered_key(x); });
        else if (a.flags & kFlagSqrtSoftplus)
            last = wide_select_tokens_keyed<S, kShared>(a, sh, range, warp, lane, [bias](float x, int e) {
                return ordered_key(alphamoe_biased_score(alphamoe_sqrt_softplus(x), bias[e]));
            });
        else
            last = wide_select_tokens_keyed<S, kShared>(a, sh, range, warp, lane, [bias](float x, int e) {
                return ordered_key(alphamoe_biased_score(alphamoe_sigmoid(x), bias[e]));
            });
        clear_row();
        // The ids read back from the outputs, but the last token's, the
        // lanes' own: a warp of one token waits on no read (e2048-m2048-k32-bm64).
        const int k = a.top_k;
        for (int32_t t = range.begin; t < range.end; ++t) {
            if (lane < k) {
                const int32_t id = t + 1 < range.end ? a.topk_ids[static_cast<int64_t>(t) * k + lane] : last;
                const int32_t local = pair_local_expert(a, id);
                if (local >= 0) atomicAdd(&sh.warp_counts[warp][local], 1);
            }
        }
    }
}

// A token ranked by the whole CTA: in the wide tiny kernel's one_token
// entry points, the call's one token; in the small kernel's token_ctas
// ones, a token a CTA. One warp ranking a row of up to 2048 experts takes
// each step over its 64 slots (e896-m1-k16-bm64-kimi-k3,
// e2048-m1-k32-bm64, e896-m128-k16-bm64-kimi-k3); here each thread keys
// S / 16 experts, the bound is the n-th largest of 64 maxima, the
// candidates that reach it are gathered from the whole CTA, and warp 0
// ranks them and writes the token. A call of one token then plans its k
// pairs in warp 0, and the CTA writes their padding: none of the general
// plan's code, run once and fetched cold, is in those entry points
// (e384-m1-k6-bm64-deepseek-v4-hash).
struct WideOneTokenShared {
    uint32_t keys[kWideMaxExperts];  // expert e's key at word e, as a warp's staged row
    uint32_t maxima[64];             // group q's largest key (experts q mod 64), a bound candidate
    uint32_t group_scores[kMaxGpuGroups];  // grouped selection: the routing groups' score keys
    uint32_t threshold;
    int32_t gathered;  // candidates that reached the threshold
    WideRankScratch rank;
    // The plan: each block's expert (ascending), its pairs, and at a
    // group's first block the group's pairs.
    int32_t live_blocks;
    int32_t block_expert[kWideMaxTopK];
    int32_t block_pairs[kWideMaxTopK];
    int32_t group_pairs[kWideMaxTopK];
};

// Expert e's ranking key from its logit x and bias b (stage_keys' key_of).
__device__ __forceinline__ uint32_t one_token_key(const RouteArgs &a, float x, float b) {
    return (a.flags & kFlagCorrectionBias) ? ordered_key(alphamoe_biased_score(wide_score(a, x), b)) : ordered_key(x);
}

// Grouped selection over the staged keys, every thread of the CTA: warp w
// scores routing groups w and w + 16 (group_score), every warp finds the
// kept groups, and each thread drops its experts of the others (in its
// keys and the staged row).
template <int P>
__device__ __forceinline__ void keep_best_groups_by_cta(const RouteArgs &a, WideOneTokenShared &sh, uint32_t (&key)[P],
                                                        int first) {
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int groups = a.num_groups;
    const int size = a.num_experts / groups;
    const bool pair_sum = (a.flags & kFlagCorrectionBias) && a.num_experts > groups;
    __syncthreads();
    for (int g = warp; g < groups; g += kWarpsPerBlock) {
        uint32_t best = kNoCandidateKey, second = kNoCandidateKey;
        for (int e = g * size + lane; e < (g + 1) * size; e += 32)
            merge_best_two(best, second, sh.keys[e], kNoCandidateKey);
        const uint32_t score = group_score(best, second, pair_sum, lane);
        if (lane == 0) sh.group_scores[g] = score;
    }
    __syncthreads();
    const uint32_t kept = best_groups(lane < groups ? sh.group_scores[lane] : kNoCandidateKey, groups, a.topk_groups, lane);
#pragma unroll
    for (int i = 0; i < P; ++i) {
        const int e = first + kBlockThreads * i;
        if (e < a.num_experts && !((kept >> (e / size)) & 1u)) {
            key[i] = kNoCandidateKey;
            sh.keys[e] = kNoCandidateKey;
        }
    }
}

// Every thread of the CTA: ranks a token (its row), lane r < n_select of
// warp 0 receiving the r-th expert. Thread 8 q + j keys experts q + 64 j + 512 i
// (i < S / 16): group q, experts q mod 64, is a quarter warp's, so every
// group holds an expert where E >= 64, and fewer than 64 leave the bound
// at "no candidate", gathering the whole row. Rows whose candidates are
// more than 64 (many equal keys) are ranked by warp 0 from the staged keys
// as the warps' rows are.
template <int S, bool kShared>
__device__ __forceinline__ void rank_one_token(const RouteArgs &a, WideOneTokenShared &sh, const char *row,
                                               int32_t &id) {
    constexpr int kPerThread = 32 * S / kBlockThreads;
    static_assert(kPerThread * kBlockThreads == 32 * S && kBlockThreads == 512, "64 groups of 8 threads");
    const RankedExperts r = ranked_experts<kShared>(a);
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int group = threadIdx.x >> 3;
    const int first = group + 64 * (threadIdx.x & 7);
    const bool biased = (a.flags & kFlagCorrectionBias) != 0;
    float x[kPerThread], b[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int e = first + kBlockThreads * i;
        x[i] = e < r.n_candidates ? load_logit<true>(a, row, e) : 0.0f;
        b[i] = biased && e < r.n_candidates ? __ldg(a.correction_bias + e) : 0.0f;
    }
    uint32_t key[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int e = first + kBlockThreads * i;
        key[i] = e < r.n_candidates ? one_token_key(a, x[i], b[i]) : kNoCandidateKey;
        sh.keys[e] = key[i];
    }
    if (a.num_groups > 1) keep_best_groups_by_cta<kPerThread>(a, sh, key, first);  // no groups with a shared expert
    uint32_t most = kNoCandidateKey;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) most = max(most, key[i]);
#pragma unroll
    for (int offset = 4; offset > 0; offset >>= 1) most = max(most, __shfl_xor_sync(kFullMask, most, offset));
    if ((threadIdx.x & 7) == 0) sh.maxima[group] = bound_candidate_of_64(most, group);
    if (threadIdx.x == 0) sh.gathered = 0;
    __syncthreads();
    if (warp == 0) {
        const uint32_t threshold = threshold_of_bound(nth_largest_of_64(sh.maxima, r.n_select, lane));
        if (lane == 0) sh.threshold = threshold;
    }
    __syncthreads();
    // The candidates in any order: ranking by counting orders them.
    const uint32_t threshold = sh.threshold;
    int32_t count = 0;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) count += key[i] >= threshold ? 1 : 0;
    const int32_t inclusive = warp_inclusive_sum(count, lane);
    const int32_t warp_count = __shfl_sync(kFullMask, inclusive, 31);
    int32_t base = 0;
    if (lane == 31 && warp_count > 0) base = atomicAdd(&sh.gathered, warp_count);
    int32_t at = __shfl_sync(kFullMask, base, 31) + inclusive - count;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        if (key[i] >= threshold) {
            if (at < 64) sh.rank.gathered[at] = rank_value(key[i], first + kBlockThreads * i);
            ++at;
        }
    }
    __syncthreads();
    if (warp != 0) return;
    const int32_t gathered = sh.gathered;
    if (gathered > 64)
        id = rank_staged_by_rounds<S>(sh.keys, r.n_select, lane, id);
    else
        rank_gathered_64(sh.rank, gathered, r.n_select, lane, id);
}

// Warp 0, once token 0 is written (lane j < k: pair j's expert id, -1 for
// a pair of no expert): places the pairs, each expert's in lane order,
// and keeps each block's expert and pairs for the CTA. An expert's group
// starts after the blocks of the lower experts' groups, each offered by
// its first lane.
__device__ __forceinline__ void plan_one_token(const RouteArgs &a, WideOneTokenShared &sh, int32_t id, int lane) {
    const int k = a.top_k;
    const int32_t bm = a.block_m;
    const int32_t local = lane < k ? pair_local_expert(a, id) : -1;
    const unsigned peers = __match_any_sync(kFullMask, local >= 0 ? local : -1 - lane);
    const int32_t rank = __popc(peers & ((1u << lane) - 1u));
    const int32_t pairs = __popc(peers);
    const bool leads = local >= 0 && rank == 0;
    const int32_t blocks = leads ? block_m_divide(a, pairs - 1) + 1 : 0;
    const uint32_t offer = leads ? static_cast<uint32_t>(local) << 8 | static_cast<uint32_t>(blocks) : ~0u;
    int32_t start = 0;  // blocks <= k < 2^8, local < 2^11
#pragma unroll 4
    for (int l = 0; l < k; ++l) {
        const uint32_t other = __shfl_sync(kFullMask, offer, l);
        start += static_cast<int32_t>(other >> 8) < local ? static_cast<int32_t>(other & 0xffu) : 0;
    }
    const int32_t pos = local >= 0 ? start * bm + rank : -1;
    if (local >= 0) a.sorted_token_ids[pos] = lane;
    if (lane < k && a.pair_to_sorted) a.pair_to_sorted[lane] = pos;
    for (int32_t j = 0; j < blocks; ++j) {
        sh.block_expert[start + j] = local;
        sh.block_pairs[start + j] = min(bm, pairs - j * bm);
    }
    if (leads) sh.group_pairs[start] = pairs;
    const int32_t live_blocks = __reduce_add_sync(kFullMask, static_cast<uint32_t>(blocks));
    if (lane == 0) sh.live_blocks = live_blocks;
}

// Every thread of the CTA, once warp 0 has planned the token: the padding
// (positions of a block past its pairs), the block experts, the live
// length, the tail and the expert table.
__device__ __forceinline__ void write_one_token_rest(const RouteArgs &a, const WideOneTokenShared &sh) {
    const int32_t bm = a.block_m;
    const int32_t live_blocks = sh.live_blocks;
    const int32_t live = live_blocks * bm;  // k * 256 at most
    const int32_t sentinel = a.top_k;       // M * k
    for (int32_t pos = threadIdx.x; pos < live; pos += kBlockThreads) {
        const int32_t block = block_m_divide(a, pos);
        if (pos - block * bm >= sh.block_pairs[block]) a.sorted_token_ids[pos] = sentinel;
    }
    if (static_cast<int32_t>(threadIdx.x) < live_blocks) a.expert_ids[threadIdx.x] = sh.block_expert[threadIdx.x];
    if (threadIdx.x == 0) {
        *a.num_tokens_post_padded = live;
        if (a.expert_offsets) a.expert_offsets[a.plan_experts] = live;
    }
    if (a.expert_counts || a.expert_offsets) {
        // Expert e's group starts at the first block of an expert >= e (a
        // search of the ascending block experts).
        for (int e = threadIdx.x; e < a.plan_experts; e += kBlockThreads) {
            int32_t below = 0;
            for (int32_t step = kWideMaxTopK; step > 0; step >>= 1)  // up to all k blocks below
                if (below + step <= live_blocks && sh.block_expert[below + step - 1] < e) below += step;
            const bool held = below < live_blocks && sh.block_expert[below] == e;
            write_expert_table_entry(a, e, held ? sh.group_pairs[below] : 0, below * bm);
        }
    }
    if (a.flags & kFlagTailFill) fill_tail(a, live, live_blocks, threadIdx.x, kBlockThreads);
}

// The tables a chosen pair's expert is looked up in (an expert map, the
// replica tables) toward L2 while the token is ranked, a line a thread up
// to a line each, so those lookups wait on L2 rather than memory
// (e256-m1-k8-bm64-deepseek-v3-eplb32).
__device__ __forceinline__ void prefetch_lookup_tables(const RouteArgs &a) {
    const auto prefetch = [](const int32_t *table, int64_t words) {
        if (threadIdx.x < (words + 31) / 32)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(table + 32 * threadIdx.x));
    };
    if (a.flags & kFlagExpertMap) prefetch(a.expert_map, a.num_experts);
    if (a.flags & kFlagRedundantExperts) {
        prefetch(a.replica_count, a.num_experts);
        prefetch(a.logical_to_physical, static_cast<int64_t>(a.num_experts) * a.replica_slots);
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

// Every thread of the CTA: the exchange of a grid planned with
// kPlanGroupSums (at most kMaxExperts plan experts, more than
// kWideOneBarrierCtas CTAs), which meets at no grid barrier, where the
// count table's exchange meets twice (e384-m4096-k6-bm64-deepseek-v4-hash).
// sh.total holds the CTA's counts, and gets the call's; sh.before (zero)
// gets the earlier CTAs'.
__device__ __forceinline__ void wide_exchange_by_group_sums(const RouteArgs &a, WideShared &sh, uint32_t phase) {
    const int e = threadIdx.x;
    const bool mine = e < a.plan_experts;
    int32_t total = 0, earlier = 0;
    exchange_by_group_sums<false>(a, phase, mine ? sh.total[e] : 0, &total, &earlier, [] {});
    if (mine) {
        sh.total[e] = total;
        sh.before[e] = earlier;
    }
    __syncthreads();
}

// Every thread of the CTA: ranks (or hashes) token t and writes it in
// warp 0, whose lane j < k returns pair j's id (write_token).
template <int S, bool kShared>
__device__ __forceinline__ int32_t select_cta_token(const RouteArgs &a, WideOneTokenShared &sh, int32_t t) {
    const int lane = threadIdx.x & 31;
    const bool warp0 = threadIdx.x < 32;
    const char *row = token_row<true>(a, t);
    prefetch_lookup_tables(a);
    int32_t id = -1;
    if (!kShared && (a.flags & kFlagHashRouting)) {
        // The whole row into shared memory while warp 0 loads the token's
        // id and then its entries: a pair's logit then waits on no third
        // memory round trip (e384-m1-k6-bm64-deepseek-v4-hash). The id's
        // load goes first, and the row's loads into registers, so neither
        // waits for the other.
        const int32_t token_id = warp0 ? __ldg(a.token_ids + t) : -1;
        constexpr int kPerThread = kWideMaxExperts / kBlockThreads;
        float x[kPerThread];
#pragma unroll
        for (int i = 0; i < kPerThread; ++i) {
            const int e = threadIdx.x + kBlockThreads * i;
            x[i] = e < a.num_experts ? load_logit<true>(a, row, e) : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < kPerThread; ++i) {
            const int e = threadIdx.x + kBlockThreads * i;
            if (e < a.num_experts) sh.keys[e] = __float_as_uint(x[i]);
        }
        if (warp0) id = hashed_expert(a, hash_entry(a, token_id, lane));
        __syncthreads();
        phase_clock(a, 2);
        if (!warp0) return -1;
        const bool weighed = lane < a.top_k && id >= 0;
        return write_token_of_logits(a, row, t, id, lane, weighed ? __uint_as_float(sh.keys[id]) : 0.0f);
    } else if (ranked_experts<kShared>(a).n_select > 0) {
        rank_one_token<S, kShared>(a, sh, row, id);
    }
    phase_clock(a, 2);  // a call of one token: ranked (route_wide's own stamp comes later)
    return warp0 ? write_token<kShared>(a, row, t, id, lane) : -1;
}

// A grid of a token a CTA (the token_ctas entry points): once every token
// is written (a grid barrier), each CTA counts every pair of the call
// itself, the call's totals and the pairs of earlier CTAs' tokens, where
// the count table's column scan would take a second barrier
// (e896-m128-k16-bm64-kimi-k3). sh.total and sh.before start at 0, as
// route_wide's prefix leaves them in a token CTA, which counts nothing.
__device__ __forceinline__ void wide_exchange_pairs(const RouteArgs &a, WideShared &sh) {
    grid_barrier(a.workspace + kWsBarrierWord, gridDim.x);
    const int64_t pairs = static_cast<int64_t>(a.num_tokens) * a.top_k;
    const int64_t earlier = static_cast<int64_t>(cta_token_range(a, blockIdx.x).begin) * a.top_k;
    // A thread's ids load together, each a trip to L2 (a 128-token grid
    // of k = 16: 4 a thread).
    constexpr int kBatch = 4;
    for (int64_t base = threadIdx.x; base < pairs; base += kBatch * kBlockThreads) {
        int32_t id[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
            const int64_t p = base + i * kBlockThreads;
            id[i] = p < pairs ? __ldcg(a.topk_ids + p) : -1;
        }
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
            const int32_t local = pair_local_expert(a, id[i]);
            if (local >= 0) {
                atomicAdd(&sh.total[local], 1);
                if (base + i * kBlockThreads < earlier) atomicAdd(&sh.before[local], 1);
            }
        }
    }
    __syncthreads();
}

__device__ __forceinline__ int4 add4(int4 x, int4 y) { return make_int4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); }

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
    phase_clock(a, 0);
    wait_for_preceding_kernel();
    phase_clock(a, 1);
    // The exchange's phase word, read while the tokens are ranked.
    const uint32_t phase = (a.flags & kPlanGroupSums) ? read_exchange_phase(a) : 0u;
    if (route_empty_call(a)) {
        allow_dependent_launch();
        return;
    }
    const int L = a.plan_experts;
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    // The warp's tokens, worked out again for the placement: kept live
    // across the ranking of rows of 64 slots they would spill on sm_100a.
    const auto warp_tokens = [&] { return warp_token_range(cta_token_range(a, blockIdx.x), threadIdx.x >> 5); };
    constexpr bool kTokenCtas = Variant::kCtaRanksToken;  // a token a CTA (the host plans one)
    if constexpr (kTokenCtas) {
        // Its ranking's scratch in the rows of the warps that hold no
        // token; warp 0's row is written by the prefix below.
        static_assert(sizeof(WideOneTokenShared) <= sizeof(sh.warp_counts) - sizeof(sh.warp_counts[0]),
                      "the token's scratch fits the rows of warps 1 on");
        select_cta_token<kSlots, kSharedExpert>(a, *reinterpret_cast<WideOneTokenShared *>(sh.warp_counts[1]),
                                                cta_token_range(a, blockIdx.x).begin);
    } else {
        constexpr bool kHashed = Variant::kHashRouting;  // the ranked keys' bias only
        if (!kHashed && (a.flags & kFlagCorrectionBias))
            for (int e = threadIdx.x; e < a.num_experts; e += kBlockThreads) sh.bias[e] = __ldg(a.correction_bias + e);
        __syncthreads();
        wide_select_tokens<kSlots, kSharedExpert, kHashed>(a, sh, warp_tokens(), warp, lane);
    }
    allow_dependent_launch();
    __syncthreads();
    phase_clock(a, 2);
    // The warps' counts as exclusive prefixes over the CTA's warps, four
    // experts a thread in 16-byte words, a quarter of the instructions of
    // one a thread (e2048-m2048-k32-bm64). Experts past L, up to the next
    // four, count zeros (clear_row) and are never read.
    const int active_warps = warps_with_tokens(cta_token_range(a, blockIdx.x));
    const int quads = (L + 3) / 4;
    for (int q = threadIdx.x; q < quads; q += kBlockThreads) {
        int4 running = make_int4(0, 0, 0, 0);
#pragma unroll 4
        for (int w = 0; w < active_warps; ++w) {
            int4 &cell = reinterpret_cast<int4 *>(sh.warp_counts[w])[q];
            const int4 c = kTokenCtas ? make_int4(0, 0, 0, 0) : cell;  // a token CTA counts in the exchange
            cell = running;
            running = add4(running, c);
        }
        reinterpret_cast<int4 *>(sh.total)[q] = running;
        reinterpret_cast<int4 *>(sh.before)[q] = make_int4(0, 0, 0, 0);
    }
    __syncthreads();
    phase_clock(a, 3);
    if (kTokenCtas)
        wide_exchange_pairs(a, sh);
    else if (a.flags & kPlanGroupSums)
        wide_exchange_by_group_sums(a, sh, phase);
    else if (gridDim.x > 1)
        wide_exchange(a, sh);  // uniform: the grid's size
    phase_clock(a, 4);
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
    for (int q = threadIdx.x; q < quads; q += kBlockThreads) {
        const int4 base =
            add4(reinterpret_cast<const int4 *>(sh.offset)[q], reinterpret_cast<const int4 *>(sh.before)[q]);
#pragma unroll 4
        for (int w = 0; w < active_warps; ++w) {
            int4 &cell = reinterpret_cast<int4 *>(sh.warp_counts[w])[q];
            cell = add4(cell, base);
        }
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
    phase_clock(a, 5);
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
    phase_clock(a, 6);
}

template <int S, bool kShared>
__device__ __forceinline__ void route_wide_one_token(const RouteArgs &a) {
    __shared__ WideOneTokenShared sh;
    phase_clock(a, 0);
    wait_for_preceding_kernel();
    if (route_empty_call(a)) {
        allow_dependent_launch();
        return;
    }
    phase_clock(a, 1);
    const int32_t id = select_cta_token<S, kShared>(a, sh, 0);
    phase_clock(a, 3);  // written
    if (threadIdx.x < 32) plan_one_token(a, sh, id, threadIdx.x);
    phase_clock(a, 4);
    __syncthreads();
    phase_clock(a, 5);
    allow_dependent_launch();
    write_one_token_rest(a, sh);
    phase_clock(a, 6);
}

// The three specializations of variants.def: one CTA, or a co-resident
// grid; the tiny kernel's one_token entry points take calls of one token,
// the small kernel's token_ctas ones grids of a token a CTA.
template <class Variant, int kSlots>
__device__ __forceinline__ void tiny(const RouteArgs &a) {
    if constexpr (Variant::kCtaRanksToken)
        route_wide_one_token<kSlots, kSharedExpert>(a);
    else
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
