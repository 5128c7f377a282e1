// One warp ranks one token's experts and computes the gate weights of the
// chosen ones (contract sections 3 and 4).
#ifndef ALPHAMOE_KERNELS_WARP_TOPK_CUH
#define ALPHAMOE_KERNELS_WARP_TOPK_CUH

#include <math.h>
#include <stdint.h>

#include "common/ordered_key.cuh"

namespace alphamoe {

constexpr unsigned kFullMask = 0xffffffffu;

// Each lane holds the keys of experts lane, lane + 32, ..., lane + 32 (S-1):
// coalesced loads, and inside a lane a larger slot index is a larger expert
// id, so a strict ">" scan keeps the lowest id among equal keys.
// Returns, in lane r < n_select, the r-th ranked expert and its key.
template <int S>
__device__ __forceinline__ void warp_select_topk(const float *__restrict__ row, int n_candidates,
                                                 int n_select, int lane, int32_t &id_out,
                                                 uint32_t &key_out) {
    uint32_t key[S];
#pragma unroll
    for (int i = 0; i < S; ++i) {
        const int e = i * 32 + lane;
        key[i] = e < n_candidates ? ordered_key(row[e]) : kNoCandidateKey;
    }
    uint32_t best = key[0];
    int best_slot = 0;
#pragma unroll
    for (int i = 1; i < S; ++i) {
        if (key[i] > best) {
            best = key[i];
            best_slot = i;
        }
    }
    for (int r = 0; r < n_select; ++r) {
        // Highest key first; among lanes holding it, the lowest expert id.
        const uint32_t top = __reduce_max_sync(kFullMask, best);
        const uint32_t mine = best == top ? static_cast<uint32_t>(best_slot * 32 + lane) : 0xffffffffu;
        const uint32_t winner = __reduce_min_sync(kFullMask, mine);
        if (lane == r) {
            id_out = static_cast<int32_t>(winner);
            key_out = top;
        }
        if ((winner & 31u) == static_cast<uint32_t>(lane)) {
#pragma unroll
            for (int i = 0; i < S; ++i)
                if (i == best_slot) key[i] = kNoCandidateKey;
            best = key[0];
            best_slot = 0;
#pragma unroll
            for (int i = 1; i < S; ++i) {
                if (key[i] > best) {
                    best = key[i];
                    best_slot = i;
                }
            }
        }
    }
}

// Renormalized softmax over the chosen logits, one per active lane, with the
// contract's non-finite rules. Every lane of the warp must call it. The
// butterfly sums give every lane the same bits, so the result depends only
// on the logits and their slots.
__device__ __forceinline__ float warp_gate_weight(float logit, bool active) {
    const bool counted = active && !isnan(logit);
    float m = counted ? logit : -INFINITY;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) m = fmaxf(m, __shfl_xor_sync(kFullMask, m, offset));
    if (m == INFINITY) {
        const bool is_inf = counted && logit == INFINITY;
        const int n_inf = __popc(__ballot_sync(kFullMask, is_inf));
        return is_inf ? 1.0f / static_cast<float>(n_inf) : 0.0f;
    }
    if (m == -INFINITY) return 0.0f;  // every chosen logit is -inf or NaN
    const float e = counted ? expf(logit - m) : 0.0f;
    float sum = e;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(kFullMask, sum, offset);
    return e / sum;
}

}  // namespace alphamoe

#endif
