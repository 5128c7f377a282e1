// The plain kernels' ranking of a 16-bit row (bf16 or fp16 logits, the
// plain softmax): warp_rank_row's logit threshold, with the candidates
// ranked as values that are never equal.
//
// With 8 or 11 significant bits the top of a row often holds equal logits,
// and equal candidates send rank_gathered through its pass over the list.
// But a 16-bit logit's ordering key and its id fit one 32-bit word:
// key << 16 | (0xffff - id) orders as the contract does (a larger logit, or
// an equal one and a lower id, first), and no two experts share one. So the
// candidates are ranked by one 32-bit comparison each, with no check for
// equal values, and every slot costs only its widening, a maximum and a
// comparison with the threshold. Each candidate makes its rank value once
// it is gathered: made in the slots, that code would sit behind a branch
// per slot (e512-m16384-k10-bm8-bf16, e512-m4096-k10-bm64-bf16,
// e256-m8192-k8-bm64-bf16, e128-m4096-k8-bm64-bf16).
#ifndef ALPHAMOE_KERNELS_HALF_ROW_RANK_CUH
#define ALPHAMOE_KERNELS_HALF_ROW_RANK_CUH

#include <stdint.h>

#include "common/flavour.cuh"
#include "common/warp_topk.cuh"

namespace alphamoe {

// The row widths that take this ranking: 4 slots and more. Rows of 1 and
// 2 slots hold too few candidates for equal ones to cost much, and are
// ranked as keys with their ids (warp_rank_keys).
template <int S>
constexpr bool kHalfRowThresholdRanks = S >= 4;

// A candidate's rank value: the 16-bit logit's ordering key above the id's
// bits (rank_id_bits, warp_topk.cuh). The key is 0x8000 plus the logit's
// magnitude for a positive logit and minus it for a negative one, so both
// zeros get 0x8000 (they compare equal); a candidate reaches a threshold
// above -inf, so it is never NaN. x is the logit widened from its 16 bits
// (exact), and narrowed back here without loss.
__device__ __forceinline__ uint32_t half_rank_value(float x, int32_t logits_type, int32_t id) {
    uint32_t bits;
    if (logits_type == kLogitsBf16) {
        bits = __float_as_uint(x) >> 16;
    } else {
        unsigned short h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
        bits = h;
    }
    const uint32_t magnitude = bits & 0x7fffu;
    const uint32_t key = bits == magnitude ? 0x8000u + magnitude : 0x8000u - magnitude;
    return key << 16 | rank_id_bits(id);
}

// warp_rank_row's contract for a row of 16-bit logits held as their bits
// (load_half_row_bits: slots past the candidates hold the bits of
// -inf). The bound is warp_rank_keys's, from the 32 lanes' maxima, at
// every width. The candidates are gathered, and each lane turns its one
// into a rank value and counts the values above its own: distinct values
// take the ranks 0 .. gathered - 1. Rows whose bound is at or below -inf, or
// with more than 32 candidates, take the general rounds, whose ties go to
// the lower id.
template <int S>
__device__ __forceinline__ void warp_rank_half_row(const RouteArgs &a, const RowSlice<S> &bits, int n_candidates,
                                                   int n_select, int lane, RankScratch &scratch, int32_t &id_out,
                                                   float &logit_out, float &largest) {
    static_assert(kHalfRowThresholdRanks<S>, "the row widths above");
    RowSlice<S> row = bits;
    widen_half_row<S>(a, row);
    const float lane_best = slot_max<0, S>(row.value);
    const uint32_t bound = scratch_nth_largest_bound(scratch, ordered_key(lane_best), n_select, lane);
    const float threshold = key_value(bound);
    const ReachingCounts count = count_reaching(row, threshold);
    constexpr int kCountBits = S >= 16 ? 5 : S >= 8 ? 4 : 3;  // at most S candidates a lane
    int32_t at, gathered;
    warp_exclusive_sum_of_counts(count.low + count.high, lane, &at, &gathered, kCountBits);
    if (bound > ordered_key(-INFINITY) && gathered <= 32) {
        // Gathered as logit bits and ids, as warp_rank_row gathers them;
        // each lane then makes its candidate's rank value, once, rather
        // than every slot that holds a candidate.
        gather_reaching(row, threshold, count.low, at, lane, scratch);
        __syncwarp();
        const uint32_t logit_bits = scratch.gathered.value[lane];
        const int32_t own_id = static_cast<int32_t>(scratch.gathered.id[lane]);
        const uint32_t mine =  // past the list 0, below every rank value
            lane < gathered ? half_rank_value(__uint_as_float(logit_bits), a.logits_type, own_id) : 0u;
        scratch.gathered.value[lane] = mine;
        __syncwarp();
        const uint4 *quads = reinterpret_cast<const uint4 *>(scratch.gathered.value);
        uint32_t rank = count_greater_16<uint32_t>(quads, mine);
        if (gathered > 16) rank += count_greater_16<uint32_t>(quads + 4, mine);
        __syncwarp();
        if (lane < gathered && rank < static_cast<uint32_t>(n_select))
            scratch.chosen[rank] = static_cast<uint64_t>(logit_bits) << 32 | mine;
        __syncwarp();
        if (lane < n_select) {
            const uint64_t chosen = scratch.chosen[lane];
            id_out = rank_id(static_cast<uint32_t>(chosen));
            logit_out = __uint_as_float(static_cast<uint32_t>(chosen >> 32));
        }
        largest = __uint_as_float(static_cast<uint32_t>(scratch.chosen[0] >> 32));
        __syncwarp();  // the scratch is reused by the warp's next token
        return;
    }
    uint32_t key[S], key_out = kNoCandidateKey, first_key;
    row_keys(row, n_candidates, lane, key);
    warp_rank_keys_by_rounds<S>(key, n_select, lane, id_out, key_out, first_key);
    logit_out = key_value(key_out);
    largest = key_value(first_key);
}

}  // namespace alphamoe

#endif
