// One warp ranks one token's experts and computes the gate weights of the
// chosen ones (contract sections 3 and 4).
//
// Each lane holds the keys of experts lane, lane + 32, ..., lane + 32 (S-1):
// coalesced loads, and inside a lane a larger slot is a larger expert id, so
// an argmax that keeps the lower slot on equal keys keeps the lower id.
#ifndef ALPHAMOE_KERNELS_WARP_TOPK_CUH
#define ALPHAMOE_KERNELS_WARP_TOPK_CUH

#include <math.h>
#include <stdint.h>

#include "common/block_scan.cuh"
#include "common/ordered_key.cuh"

namespace alphamoe {

constexpr unsigned kFullMask = 0xffffffffu;

// A token's logits as this lane holds them, read straight from memory.
template <int S>
struct RowSlice {
    float value[S];
};

// Whether slot i of this lane holds one of the row's n_candidates experts.
// S is the smallest power of two of slots that holds the row, so with S > 1
// the first half of the slots is always full: no test, no predicate.
// i * 32 + lane < n is i < ceil((n - lane) / 32), a bound the compiler
// computes once for all slots (n >= 1, so n - lane + 31 > 0).
template <int S>
__device__ __forceinline__ bool slot_in_row(int i, int lane, int n_candidates) {
    return (S > 1 && i < S / 2) || i < ((n_candidates - lane + 31) >> 5);
}

template <int S>
__device__ __forceinline__ void row_keys(const RowSlice<S> &s, int n_candidates, int lane,
                                         uint32_t (&key)[S]) {
#pragma unroll
    for (int i = 0; i < S; ++i)
        key[i] = slot_in_row<S>(i, lane, n_candidates) ? ordered_key(s.value[i]) : kNoCandidateKey;
}

// Argmax over key[kLo, kLo + kN), the lower slot winning ties: a balanced
// tree, so its depth is log2(S) rather than S.
template <int kLo, int kN, int S>
__device__ __forceinline__ void slot_argmax(const uint32_t (&key)[S], uint32_t &best, int &slot) {
    if constexpr (kN == 1) {
        best = key[kLo];
        slot = kLo;
    } else {
        uint32_t left, right;
        int left_slot, right_slot;
        slot_argmax<kLo, kN / 2>(key, left, left_slot);
        slot_argmax<kLo + kN / 2, kN - kN / 2>(key, right, right_slot);
        const bool take_right = right > left;
        best = take_right ? right : left;
        slot = take_right ? right_slot : left_slot;
    }
}

// fmaxf over value[kLo, kLo + kN): a balanced tree, like slot_argmax.
template <int kLo, int kN, int S>
__device__ __forceinline__ float slot_max(const float (&value)[S]) {
    if constexpr (kN == 1)
        return value[kLo];
    else
        return fmaxf(slot_max<kLo, kN / 2>(value), slot_max<kLo + kN / 2, kN - kN / 2>(value));
}

// The general ranking: lane r < n_select receives the r-th expert and its
// key, every lane the first-ranked key. A round takes the warp's largest key
// (REDUX); when a single lane holds it, as for almost all real logits, that
// lane is the winner without a second reduction; equal keys in several lanes
// fall back to the lowest id. The winner lane then finds its next best key.
template <int S>
__device__ __forceinline__ void warp_rank_keys_by_rounds(uint32_t (&key)[S], int n_select, int lane,
                                               int32_t &id_out, uint32_t &key_out,
                                               uint32_t &first_key) {
    uint32_t best;
    int best_slot;
    slot_argmax<0, S>(key, best, best_slot);
    first_key = kNanKey;
    for (int r = 0; r < n_select; ++r) {
        const uint32_t top = __reduce_max_sync(kFullMask, best);
        const bool holds_top = best == top;
        const uint32_t holders = __ballot_sync(kFullMask, holds_top);
        int winner_lane, winner_id;
        if ((holders & (holders - 1u)) == 0u) {
            winner_lane = __ffs(holders) - 1;
            winner_id = __shfl_sync(kFullMask, best_slot, winner_lane) * 32 + winner_lane;
        } else {
            const uint32_t mine = holds_top ? static_cast<uint32_t>(best_slot * 32 + lane) : 0xffffffffu;
            winner_id = static_cast<int>(__reduce_min_sync(kFullMask, mine));
            winner_lane = winner_id & 31;
        }
        if (r == 0) first_key = top;
        if (lane == r) {
            id_out = winner_id;
            key_out = top;
        }
        if (lane == winner_lane) {
#pragma unroll
            for (int i = 0; i < S; ++i)
                if (i == best_slot) key[i] = kNoCandidateKey;
            slot_argmax<0, S>(key, best, best_slot);
        }
    }
}

// The bound on a token's chosen keys: a lower bound of the n-th largest of
// kValues keys (16 or 32), counting equal keys separately (1 <= n <=
// kValues): the n-th largest with its low 6 bits cleared. Each key is
// halved and its low 5 bits make way for its position's tag
// (bound_candidate), so the values are distinct and below 2^31, and the
// n-th largest is the one with n - 1 values above it: a single comparison
// per pair of values, no chain of reductions. Below 2^31 a comparison is
// the sign of a difference, so each costs a subtraction and a shift-add
// rather than a compare, an add and a select.
template <int kValues>
__device__ __forceinline__ uint32_t bound_candidate(uint32_t key, int i) {
    return ((key >> 1) & ~31u) | static_cast<uint32_t>(kValues - 1 - (i & (kValues - 1)));
}
__device__ __forceinline__ uint32_t bound_of_candidate(uint32_t candidate) { return (candidate & ~31u) << 1; }

// The bound, once each lane knows how many of the values are above its
// own (`mine`, bound_candidate's): the lane with n - 1 above holds it.
__device__ __forceinline__ uint32_t bound_of_lane_with_n_above(uint32_t mine, uint32_t above, int n) {
    const uint32_t holder = __ballot_sync(kFullMask, above == static_cast<uint32_t>(n - 1));
    return bound_of_candidate(__shfl_sync(kFullMask, mine, __ffs(holder) - 1));
}

// The bound of 16 keys, lane l holding key l & 15, by shuffles. Each half
// of the warp compares with its own 8 of them: the upper half holds the
// keys of lanes l ^ 8, reads keys 8..15 where the lower half reads 0..7,
// and lanes l and l ^ 24 (the same key) add their counts. 8 shuffles and
// 16 comparisons rather than 16 and 32.
__device__ __forceinline__ uint32_t warp_nth_largest_bound(uint32_t key, int n, int lane) {
    uint32_t mine = bound_candidate<16>(key, lane);
    uint32_t above = 0;
    const uint32_t swapped = __shfl_xor_sync(kFullMask, mine, 8);
    if (lane >= 16) mine = swapped;
#pragma unroll
    for (int j = 0; j < 8; ++j) above += (mine - __shfl_sync(kFullMask, mine, j, 16)) >> 31;
    above += __shfl_xor_sync(kFullMask, above, 24);
    return bound_of_lane_with_n_above(mine, above, n);
}

// The bound of kValues keys that lie in shared memory, word i holding
// bound_candidate<kValues>(key i, i), 16-byte aligned: each lane reads the
// values it compares with in 16-byte broadcast loads, where the shuffles
// would cost a round trip each (with the CTA's every warp computing the
// bound, all of them through the one shuffle unit). With 16 keys lane l
// holds key l & 15 and compares it with keys 8 (l >> 4) .. + 7, and lanes
// l and l ^ 16 add their counts; with 32, lane l compares key l with all
// 32.
template <int kValues>
__device__ __forceinline__ uint32_t shared_nth_largest_bound(const uint32_t *candidates, int n, int lane) {
    static_assert(kValues == 16 || kValues == 32, "a key per lane or per pair of lanes");
    constexpr int kCompared = kValues == 16 ? 8 : 32;
    const uint32_t mine = candidates[lane & (kValues - 1)];
    const uint4 *compared = reinterpret_cast<const uint4 *>(candidates) + (kValues == 16 ? (lane >> 4) * 2 : 0);
    uint32_t above = 0;
#pragma unroll
    for (int q = 0; q < kCompared / 4; ++q) {
        const uint4 c = compared[q];
        above += ((mine - c.x) >> 31) + ((mine - c.y) >> 31) + ((mine - c.z) >> 31) + ((mine - c.w) >> 31);
    }
    if constexpr (kValues == 16) above += __shfl_xor_sync(kFullMask, above, 16);
    return bound_of_lane_with_n_above(mine, above, n);
}

// warp_exclusive_sum_below_32 of each lane's count of candidates, below
// 2^bits: a token's candidates are few (10 to 20), so a lane rarely holds
// 4 or more; one vote asks whether any does, and if none, two ballots
// count rather than bits.
__device__ __forceinline__ void warp_exclusive_sum_of_counts(uint32_t count, int lane, int32_t *before,
                                                             int32_t *sum, int bits) {
    if (bits > 3 && !__any_sync(kFullMask, count >= 4u)) bits = 2;
    warp_exclusive_sum_below_32(count, lane, before, sum, bits);
}

// Scratch of one warp for the rankings: the gathered candidates, as values
// and ids in two arrays (a 64-bit store of each pair would first move it
// into adjacent registers), then the chosen ones by rank, a value and an
// id in each 64-bit word.
struct alignas(16) RankScratch {
    union {
        uint64_t chosen[32];
        struct {
            uint32_t value[32];
            uint32_t id[32];
        } gathered;
    };
};

// The bound of 32 keys, one a lane, through the warp's scratch: the lanes
// store their keys as the bound compares them and read them back
// (shared_nth_largest_bound), where 32 shuffles would each be a round trip
// through the shuffle unit the SM's warps share (e256-m8192-k8-bm64). (The
// 16 keys of warp_rank_row's bound keep their shuffles, which are faster
// there: e512-m4096-k10-bm64, e512-m16384-k10-bm8.) The scratch is free
// again when it returns.
__device__ __forceinline__ uint32_t scratch_nth_largest_bound(RankScratch &scratch, uint32_t key, int n, int lane) {
    scratch.gathered.value[lane] = bound_candidate<32>(key, lane);
    __syncwarp();
    const uint32_t bound = shared_nth_largest_bound<32>(scratch.gathered.value, n, lane);
    __syncwarp();  // read before the gathering overwrites them
    return bound;
}

// What rank_gathered ranks: logits (float), or ordering keys (uint32_t,
// ordered_key), kept in the scratch as their bits.
__device__ __forceinline__ uint32_t value_bits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ uint32_t value_bits(uint32_t x) { return x; }
template <typename T>
__device__ T value_from_bits(uint32_t bits);
template <>
__device__ __forceinline__ float value_from_bits<float>(uint32_t bits) {
    return __uint_as_float(bits);
}
template <>
__device__ __forceinline__ uint32_t value_from_bits<uint32_t>(uint32_t bits) {
    return bits;
}

// count + (x > y ? 1 : 0): a comparison and a predicated add, where the
// compiler's form adds, then selects the old count or the new.
__device__ __forceinline__ uint32_t add_if_greater(uint32_t count, float x, float y) {
    asm("{\n\t.reg .pred p;\n\tsetp.gt.f32 p, %1, %2;\n\t@p add.u32 %0, %0, 1;\n\t}"
        : "+r"(count)
        : "f"(x), "f"(y));
    return count;
}
__device__ __forceinline__ uint32_t add_if_greater(uint32_t count, uint32_t x, uint32_t y) {
    asm("{\n\t.reg .pred p;\n\tsetp.gt.u32 p, %1, %2;\n\t@p add.u32 %0, %0, 1;\n\t}"
        : "+r"(count)
        : "r"(x), "r"(y));
    return count;
}

// count plus how many of the four values of v exceed mine, in one chain.
template <typename T>
__device__ __forceinline__ uint32_t add_greater_of_quad(uint32_t count, uint4 v, T mine) {
    count = add_if_greater(count, value_from_bits<T>(v.x), mine);
    count = add_if_greater(count, value_from_bits<T>(v.y), mine);
    count = add_if_greater(count, value_from_bits<T>(v.z), mine);
    return add_if_greater(count, value_from_bits<T>(v.w), mine);
}

// How many of the 16 values at quads (four 16-byte loads) exceed mine, in
// four chains of adds.
template <typename T>
__device__ __forceinline__ uint32_t count_greater_16(const uint4 *quads, T mine) {
    uint32_t count[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) count[q] = add_greater_of_quad<T>(0u, quads[q], mine);
    return (count[0] + count[1]) + (count[2] + count[3]);
}

// The same count over the list's first `gathered` entries, eight (two
// 16-byte loads) a loop step.
template <typename T>
__device__ __forceinline__ uint32_t count_greater_in_steps(const uint4 *quads, int gathered, T mine) {
    uint32_t low = 0, high = 0;  // two chains of adds, each half as long
#pragma unroll 1
    for (int j = 0; j < gathered; j += 8) {
        const uint4 a = quads[j / 4];
        const uint4 b = quads[j / 4 + 1];
        low = add_greater_of_quad<T>(low, a, mine);
        high = add_greater_of_quad<T>(high, b, mine);
    }
    return low + high;
}

// Ranks the candidates gathered in scratch.gathered, lane l < gathered
// holding candidate l: each candidate's rank is the number ranked ahead of
// it (a larger value, or an equal value and a lower id), and lane
// r < n_select receives the r-th (id and value), every lane the first's
// value. Returns the lane's rank and, in own_id, its candidate's id
// (meaningful for lanes below gathered). From gathered to the end of the
// list (32 entries) the values must be below every candidate's: -inf below
// logits above it, key 0 below keys above it. The padding then never
// counts, so the list is counted in whole 16-byte loads with no remainder
// steps.
// Values compare in 32 bits and the count is of larger values only; where
// two candidates are equal (one reduction of the ranks tells), each then
// also counts the equal ones of lower id: faster than a value and an id as
// one 64-bit rank value (rank_gathered_wide), a 64-bit load and a
// two-instruction comparison per candidate (e512-m16384-k10-bm8,
// e256-m1-k8-bm64, e256-m1-k8-bm64-deepseek-v3).
// kCountInSteps: the flavoured kernels count eight entries a loop step
// (count_greater_in_steps); the plain kernels count sixteen with no loop,
// and the next sixteen only where the list reaches them, since the loop
// branches back after each step. In the flavoured kernels sixteen at a
// time is slower (e256-m8-k8-bm64-deepseek-v3).
template <typename T, bool kCountInSteps = false>
__device__ __forceinline__ int rank_gathered(RankScratch &scratch, int gathered, int n_select, int lane,
                                             int32_t &own_id, int32_t &id_out, T &value_out, T &first_value) {
    const T mine = value_from_bits<T>(scratch.gathered.value[lane]);
    own_id = static_cast<int32_t>(scratch.gathered.id[lane]);
    const uint4 *quads = reinterpret_cast<const uint4 *>(scratch.gathered.value);
    uint32_t rank;
    if constexpr (kCountInSteps) {
        rank = count_greater_in_steps<T>(quads, gathered, mine);
    } else {
        rank = count_greater_16<T>(quads, mine);
        if (gathered > 16) rank += count_greater_16<T>(quads + 4, mine);
    }
    // Distinct values take the ranks 0 .. gathered - 1, which sum to
    // gathered (gathered - 1) / 2; equal values share the lowest of theirs,
    // so any equality makes the sum fall short. (A vote by __match_any_sync
    // before the count costs every token far more.)
    const uint32_t rank_sum = __reduce_add_sync(kFullMask, lane < gathered ? rank : 0u);
    if (rank_sum != static_cast<uint32_t>(gathered) * static_cast<uint32_t>(gathered - 1) / 2u) {
#pragma unroll 1
        for (int j = 0; j < gathered; ++j)
            rank += value_from_bits<T>(scratch.gathered.value[j]) == mine &&
                            static_cast<int32_t>(scratch.gathered.id[j]) < own_id
                        ? 1u
                        : 0u;
    }
    __syncwarp();
    if (lane < gathered && rank < static_cast<uint32_t>(n_select))
        scratch.chosen[rank] = (static_cast<uint64_t>(static_cast<uint32_t>(own_id)) << 32) | value_bits(mine);
    __syncwarp();
    if (lane < n_select) {
        const uint64_t chosen = scratch.chosen[lane];
        value_out = value_from_bits<T>(static_cast<uint32_t>(chosen));
        id_out = static_cast<int32_t>(chosen >> 32);
    }
    first_value = value_from_bits<T>(static_cast<uint32_t>(scratch.chosen[0]));
    __syncwarp();  // the scratch is reused by the warp's next token
    return static_cast<int>(rank);
}

// An id's part of a rank value, 0xffff - id in the low 16 bits, so that of
// two equal keys the lower id ranks first; and the id such bits hold.
__device__ __forceinline__ uint32_t rank_id_bits(int32_t id) { return static_cast<uint32_t>(0xffff - id); }
__device__ __forceinline__ int32_t rank_id(uint32_t bits) { return 0xffff - static_cast<int32_t>(bits & 0xffffu); }

// The key in the high half and the id's bits in the low: a larger value
// ranks first (a larger key, or an equal key and a lower id), and values of
// distinct experts differ.
__device__ __forceinline__ uint64_t rank_value(uint32_t key, int32_t id) {
    return (static_cast<uint64_t>(key) << 32) | rank_id_bits(id);
}

__device__ __forceinline__ int add_if_greater(int count, uint64_t a, uint64_t b) {
    asm("{\n\t.reg .pred p;\n\tsetp.gt.u64 p, %1, %2;\n\t@p add.s32 %0, %0, 1;\n\t}"
        : "+r"(count)
        : "l"(a), "l"(b));
    return count;
}

// rank_gathered's result from 64-bit rank values: lane l < gathered holds
// chosen[l] in `mine`, zero past the list, and the list is counted kChunk
// at a time. Distinct values need no check for equal ones, which costs
// rank_gathered a reduction after its count. warp_rank_keys ranks so the
// few candidates of rows of 2 slots (4 to 8 for k = 4), 4 at a time
// (e60-m4096-k4-bm64-qwen2-moe), and the flavoured kernels' rows of 16
// slots, 8 at a time (e384-m4096-k8-bm64-kimi-k2;
// e512-m4096-k10-bm64-ep-map64 alone would take rank_gathered). Returns
// the lane's rank.
template <int kChunk>
__device__ __forceinline__ int rank_gathered_wide(RankScratch &scratch, uint64_t mine, int gathered, int n_select,
                                                  int lane, int32_t &id_out, uint32_t &key_out,
                                                  uint32_t &first_key) {
    int rank = 0;
#pragma unroll 1
    for (int j = 0; j < gathered; j += kChunk) {
#pragma unroll
        for (int i = 0; i < kChunk; ++i) rank = add_if_greater(rank, scratch.chosen[j + i], mine);
    }
    __syncwarp();
    if (lane < gathered && rank < n_select) scratch.chosen[rank] = mine;
    __syncwarp();
    if (lane < n_select) {
        const uint64_t chosen = scratch.chosen[lane];
        key_out = static_cast<uint32_t>(chosen >> 32);
        id_out = rank_id(static_cast<uint32_t>(chosen));
    }
    first_key = static_cast<uint32_t>(scratch.chosen[0] >> 32);
    __syncwarp();  // the scratch is reused by the warp's next token
    return rank;
}

// Ranks the keys like warp_rank_keys_by_rounds, with a short dependency
// chain. Let T be the n_select-th largest of the lanes' largest keys: those
// lanes hold n_select distinct experts with keys >= T, so every chosen
// expert has a key >= T, and >= any lower bound of T. Typically few keys
// reach the bound; when at most 32 do, they are gathered one per lane and
// each finds its rank by counting the candidates ahead of it. Otherwise
// (many equal keys) the general rounds run. Both give the contract's order
// exactly.
template <int S, bool kCountInSteps = false>
__device__ __forceinline__ void warp_rank_keys(uint32_t (&key)[S], int n_select, int lane,
                                               RankScratch &scratch, int32_t &id_out,
                                               uint32_t &key_out, uint32_t &first_key) {
    static_assert(S <= 16, "a lane's candidate count must fit in 5 bits");
    if constexpr (S == 1) {  // one key per lane: the rounds need no rescan already
        warp_rank_keys_by_rounds<S>(key, n_select, lane, id_out, key_out, first_key);
        return;
    }
    uint32_t lane_best = key[0];
#pragma unroll
    for (int i = 1; i < S; ++i) lane_best = max(lane_best, key[i]);
    const uint32_t threshold = scratch_nth_largest_bound(scratch, lane_best, n_select, lane);
    uint32_t is_candidate = 0;  // bit i: key[i] reaches the threshold
#pragma unroll
    for (int i = 0; i < S; ++i) is_candidate |= key[i] >= threshold ? 1u << i : 0u;
    // Where the lane's candidates go in the gathered list, and how many: at
    // most S per lane, so at most a ballot per bit of S (4 for 8 slots, 2
    // for 2).
    constexpr int kCountBits = S >= 16 ? 5 : S >= 8 ? 4 : S >= 4 ? 3 : 2;
    int32_t at, gathered;
    warp_exclusive_sum_of_counts(__popc(is_candidate), lane, &at, &gathered, kCountBits);
    if (gathered > 32) {
        warp_rank_keys_by_rounds<S>(key, n_select, lane, id_out, key_out, first_key);
        return;
    }
    if constexpr (S <= 2 || S == 16) {  // rank_gathered_wide says why
        if (lane >= gathered) scratch.chosen[lane] = 0u;  // rank_gathered_wide's padding
#pragma unroll
        for (int i = 0; i < S; ++i)
            if ((is_candidate >> i) & 1u) scratch.chosen[at++] = rank_value(key[i], i * 32 + lane);
        __syncwarp();
        const uint64_t mine = lane < gathered ? scratch.chosen[lane] : 0u;
        rank_gathered_wide<S <= 2 ? 4 : 8>(scratch, mine, gathered, n_select, lane, id_out, key_out, first_key);
        return;
    }
    if (lane >= gathered) scratch.gathered.value[lane] = kNoCandidateKey;  // rank_gathered's padding
    uint32_t *next = &scratch.gathered.value[at];  // the ids 32 words after
#pragma unroll
    for (int i = 0; i < S; ++i) {
        if ((is_candidate >> i) & 1u) {
            next[0] = key[i];
            next[32] = static_cast<uint32_t>(i * 32 + lane);
            ++next;
        }
    }
    __syncwarp();
    int32_t own_id;
    rank_gathered<uint32_t, kCountInSteps>(scratch, gathered, n_select, lane, own_id, id_out, key_out, first_key);
}

// ~0u where x >= threshold, else 0 (never for NaN). Summing these, rather
// than bools, keeps the compiler from assembling the comparisons into a bit
// mask bit by bit, which costs two more instructions per slot.
__device__ __forceinline__ uint32_t reaches_mask(float x, float threshold) {
    uint32_t mask;
    asm("set.ge.u32.f32 %0, %1, %2;" : "=r"(mask) : "f"(x), "f"(threshold));
    return mask;
}

// How many of the lane's slots reach the threshold, in the lower and the
// upper half of the slots apart, so that each half gathers through its own
// address (gather_reaching): two chains of S / 2 steps, not one of S.
// Counted as integer masks (0 or ~0): cheaper than keeping a bit mask of
// them.
struct ReachingCounts {
    uint32_t low, high;
};
template <int S>
__device__ __forceinline__ ReachingCounts count_reaching(const RowSlice<S> &row, float threshold) {
    constexpr int kHalf = S / 2;
    ReachingCounts c = {0, 0};
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
        c.low -= reaches_mask(row.value[i], threshold);
        c.high -= reaches_mask(row.value[kHalf + i], threshold);
    }
    return c;
}

// Writes the lane's slots that reach the threshold to the warp's list from
// entry `at` on (the lane's place, warp_exclusive_sum_of_counts of
// count_reaching's counts): each logit's bits, and its id 32 words after.
// A moving address per half.
template <int S>
__device__ __forceinline__ void gather_reaching(const RowSlice<S> &row, float threshold, uint32_t count_low,
                                                int32_t at, int lane, RankScratch &scratch) {
    static_assert(sizeof(scratch.gathered.value) == 32 * sizeof(uint32_t), "ids follow 32 values");
    constexpr int kHalf = S / 2;
    uint32_t *next_low = &scratch.gathered.value[at];
    uint32_t *next_high = next_low + count_low;
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
        if (row.value[i] >= threshold) {
            next_low[0] = __float_as_uint(row.value[i]);
            next_low[32] = static_cast<uint32_t>(i * 32 + lane);
            ++next_low;
        }
        if (row.value[kHalf + i] >= threshold) {
            next_high[0] = __float_as_uint(row.value[kHalf + i]);
            next_high[32] = static_cast<uint32_t>((kHalf + i) * 32 + lane);
            ++next_high;
        }
    }
}

// The fewest slots per lane (E > 32 * (this / 2)) for which warp_rank_row
// compares logits with a threshold: with fewer, the conversions it saves do
// not pay for its extra steps (e256-m8192-k8-bm64, e128-m4096-k8-bm64).
constexpr int kLogitThresholdMinSlots = 16;

// The ranking of the plain kernels (fp32 logits, the plain softmax): lane
// r < n_select receives the r-th expert and its logit, every lane the
// first-ranked logit (NaN only when every chosen logit is). warp_rank_keys's
// method, with the per-expert work cut to a maximum and a comparison: the
// lanes' largest logits give the bound, whose logit is the threshold the
// logits are compared with, and the candidates are ranked as logits
// (rank_gathered). Slots past the row hold -inf (load_row_slice); fmaxf
// skips NaN, and a NaN never reaches a threshold. A bound at or below the
// key of -inf (a row of -inf and NaN, say) takes the general rounds: its
// threshold would make slots past the row candidates.
template <int S>
__device__ __forceinline__ void warp_rank_row(const RowSlice<S> &row, int n_candidates, int n_select,
                                              int lane, RankScratch &scratch, int32_t &id_out,
                                              float &logit_out, float &largest) {
    static_assert(S <= 16, "a lane's candidate count must fit in 5 bits");
    uint32_t key_out = kNoCandidateKey, first_key;
    if constexpr (S < kLogitThresholdMinSlots) {
        uint32_t key[S];
        row_keys(row, n_candidates, lane, key);
        warp_rank_keys<S>(key, n_select, lane, scratch, id_out, key_out, first_key);
        logit_out = key_value(key_out);
        largest = key_value(first_key);
        return;
    } else {
        const float lane_best = slot_max<0, S>(row.value);
        // The bound from the 16 maxima of lane pairs (l, l + 16): n of them
        // are n distinct experts too, so it bounds the n-th largest as well,
        // for half the comparisons; a few more candidates reach it (on
        // random rows of 512, 14.7 rather than 11.7 for n = 10).
        const float pair_best = fmaxf(lane_best, __shfl_xor_sync(kFullMask, lane_best, 16));
        const uint32_t bound = warp_nth_largest_bound(ordered_key(pair_best), n_select, lane);
        // key >= bound <=> logit >= threshold for every logit but NaN: keys
        // keep the order of logits (and merge the zeros, which compare equal).
        const float threshold = key_value(bound);
        // Counted, then compared again where the candidates are gathered.
        const ReachingCounts count = count_reaching(row, threshold);
        int32_t at, gathered;
        warp_exclusive_sum_of_counts(count.low + count.high, lane, &at, &gathered, 5);
        if (bound > ordered_key(-INFINITY) && gathered <= 32) {
            // Gathered as logit bits and id, and ranked as logits: no slot
            // and no candidate needs an ordering key.
            gather_reaching(row, threshold, count.low, at, lane, scratch);
            if (lane >= gathered) scratch.gathered.value[lane] = __float_as_uint(-INFINITY);  // padding
            __syncwarp();
            int32_t own_id;
            rank_gathered<float>(scratch, gathered, n_select, lane, own_id, id_out, logit_out, largest);
            return;
        }
    }
    uint32_t key[S];
    row_keys(row, n_candidates, lane, key);
    warp_rank_keys_by_rounds<S>(key, n_select, lane, id_out, key_out, first_key);
    logit_out = key_value(key_out);
    largest = key_value(first_key);
}

// The sum of x over lanes 0..15, with the same bits in each of them: a
// butterfly (xor 8, 4, 2, 1), so that every lane adds the same pairs.
// Lanes 16..31 sum their own 16.
// terms: where given, 16 words of the warp's shared memory (16-byte
// aligned, which no lane reads or writes until the caller's next
// __syncwarp) take the butterfly's place, with the same bits in every
// lane: the terms are stored, read back in four 16-byte loads and added
// pair by pair as the butterfly adds them. One store and one load on the
// chain, where the butterfly takes four shuffles one after the other:
// where the token's outputs are all that is left of the call (the
// one-token rankings).
__device__ __forceinline__ float sum_of_16_lanes(float x, float *terms = nullptr) {
    if (!terms) {
#pragma unroll
        for (int offset = 8; offset > 0; offset >>= 1) x += __shfl_xor_sync(kFullMask, x, offset);
        return x;
    }
    const int lane = threadIdx.x & 31;
    if (lane < 16) terms[lane] = x;
    __syncwarp();
    const float4 *quads = reinterpret_cast<const float4 *>(terms);
    const float4 t0 = quads[0], t1 = quads[1], t2 = quads[2], t3 = quads[3];
    // Offset 8: term j and term j + 8.
    const float a0 = t0.x + t2.x, a1 = t0.y + t2.y, a2 = t0.z + t2.z, a3 = t0.w + t2.w;
    const float a4 = t1.x + t3.x, a5 = t1.y + t3.y, a6 = t1.z + t3.z, a7 = t1.w + t3.w;
    // Offsets 4, 2 and 1.
    const float b0 = a0 + a4, b1 = a1 + a5, b2 = a2 + a6, b3 = a3 + a7;
    return (b0 + b2) + (b1 + b3);
}

// 1 / x rounded to nearest for normal x below 2^126, with __frcp_rn's
// bits: its fast path alone, the approximation and one Newton step.
// __frcp_rn first tests x's exponent for a slow path of the extremes, which
// costs a branch per call and which a sum of at most 16 terms of at most 1
// never takes.
__device__ __forceinline__ float reciprocal_of_normal(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    const float error = fmaf(x, r, -1.0f);
    return fmaf(r, -error, r);
}

// Renormalized softmax over the chosen logits, one per active lane, with the
// contract's non-finite rules. `largest` is the largest chosen logit that is
// not NaN (NaN when every chosen logit is NaN), the same in every lane. Every
// lane of the warp must call it. Chosen lanes are 0..k-1 with k <= 16, so a
// butterfly over 16 lanes sums them, and it gives every lane the same bits
// (float addition commutes), so a weight depends only on the logits.
// The finite and the infinite case are both computed and one is chosen at
// the end: branching on `largest` first would put two branches on every
// token's path, about as long as the steps they skip.
// sum_terms: where given, the sum is taken through them (sum_of_16_lanes),
// with the same bits.
__device__ __forceinline__ float warp_gate_weight(float logit, bool active, float largest,
                                                  float *sum_terms = nullptr) {
    const bool counted = active && !isnan(logit);
    // largest == +inf: the +inf logits share weight 1 (n of them, 1 / n
    // rounded as the IEEE division rounds it).
    const bool is_inf = counted && logit == INFINITY;
    const int n_inf = __popc(__ballot_sync(kFullMask, is_inf));
    const float inf_weight = is_inf ? reciprocal_of_normal(static_cast<float>(n_inf)) : 0.0f;
    // Finite largest: the exponential in every lane, then chosen, so that
    // no branch goes around it. (Where largest is not finite, e and the
    // sum may be NaN or inf; the choice at the end drops them.)
    const float any_e = expf(logit - largest);
    const float e = counted ? any_e : 0.0f;
    const float sum = sum_of_16_lanes(e, sum_terms);
    // In lanes 0..15 1 <= sum <= 16 (the largest logit contributes exp(0));
    // lanes 16..31 may have summed zeros, and are lifted to 1, so every
    // lane's sum is in reciprocal_of_normal's range. A rounded reciprocal
    // and a product are within 1.5 ulp of the quotient, and unlike the IEEE
    // division take no slow path where e is 0.
    const float finite_weight = e * reciprocal_of_normal(fmaxf(sum, 1.0f));
    if (largest == INFINITY) return inf_weight;
    return largest > -INFINITY ? finite_weight : 0.0f;  // else every chosen logit is -inf or NaN
}

}  // namespace alphamoe

#endif
