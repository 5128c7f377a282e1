// CTA-wide exclusive prefix sum, one value per thread.
#ifndef ALPHAMOE_KERNELS_BLOCK_SCAN_CUH
#define ALPHAMOE_KERNELS_BLOCK_SCAN_CUH

#include <stdint.h>

#include "route_args.h"

namespace alphamoe {

// The inclusive prefix sum of value in lane order over lanes 0 .. kLanes -
// 1 (a power of two), by shuffles; lanes from kLanes on get partial sums,
// for no caller to read.
template <int kLanes = 32>
__device__ __forceinline__ int32_t warp_inclusive_sum(int32_t value, int lane) {
    int32_t inclusive = value;
#pragma unroll
    for (int offset = 1; offset < kLanes; offset <<= 1) {
        const int32_t up = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += up;
    }
    return inclusive;
}

// warp_totals: kWarpsPerBlock words of shared memory. Returns the exclusive
// prefix of `value` in thread order and the sum over the CTA in *total.
// Contains one __syncthreads: every thread of the CTA must call it, and
// none may write warp_totals again before the CTA's next barrier. Values
// are non-negative and their sum fits int32.
__device__ __forceinline__ int32_t block_exclusive_scan(int32_t value, int32_t *warp_totals,
                                                        int32_t *total) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int32_t inclusive = warp_inclusive_sum(value, lane);
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    // Every warp sums the totals of the warps before it, and of all, with
    // two reductions: no scan by one warp, and no second barrier after it.
    const int32_t warp_total = lane < kWarpsPerBlock ? warp_totals[lane] : 0;
    const int32_t before_warp = __reduce_add_sync(0xffffffffu, lane < warp ? warp_total : 0);
    *total = __reduce_add_sync(0xffffffffu, warp_total);
    return before_warp + inclusive - value;
}

// The warp's exclusive prefix of values below 2^bits (bits <= 5, the same
// in every lane), in lane order, and its sum: a ballot per bit,
// independent of one another, where a scan by shuffles is a chain of five
// round trips.
__device__ __forceinline__ void warp_exclusive_sum_below_32(uint32_t value, int lane, int32_t *before,
                                                            int32_t *sum, int bits = 5) {
    const uint32_t lanes_before = (1u << lane) - 1u;
    *before = 0;
    *sum = 0;
#pragma unroll
    for (int bit = 0; bit < 5; ++bit) {
        if (bit >= bits) break;
        const uint32_t lanes = __ballot_sync(0xffffffffu, (value >> bit) & 1u);
        *before += __popc(lanes & lanes_before) << bit;
        *sum += __popc(lanes) << bit;
    }
}

// block_exclusive_scan for values below 2^bits (bits <= 5), by
// warp_exclusive_sum_below_32. The same barrier and the same rules for
// warp_totals.
__device__ __forceinline__ int32_t block_exclusive_scan_below_32(uint32_t value, int32_t *warp_totals,
                                                                 int32_t *total, int bits) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    int32_t before = 0, warp_sum = 0;
    warp_exclusive_sum_below_32(value, lane, &before, &warp_sum, bits);
    if (lane == 0) warp_totals[warp] = warp_sum;
    __syncthreads();
    const int32_t warp_total = lane < kWarpsPerBlock ? warp_totals[lane] : 0;
    const int32_t before_warp = __reduce_add_sync(0xffffffffu, lane < warp ? warp_total : 0);
    *total = __reduce_add_sync(0xffffffffu, warp_total);
    return before_warp + before;
}

}  // namespace alphamoe

#endif
