// CTA-wide exclusive prefix sum, one value per thread.
#ifndef ALPHAMOE_KERNELS_BLOCK_SCAN_CUH
#define ALPHAMOE_KERNELS_BLOCK_SCAN_CUH

#include <stdint.h>

#include "route_args.h"

namespace alphamoe {

// warp_totals: kWarpsPerBlock words of shared memory. Returns the exclusive
// prefix of `value` in thread order and the sum over the CTA in *total.
// Contains __syncthreads: every thread of the CTA must call it.
__device__ __forceinline__ int32_t block_exclusive_scan(int32_t value, int32_t *warp_totals,
                                                        int32_t *total) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    int32_t inclusive = value;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        const int32_t up = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += up;
    }
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        int32_t w = lane < kWarpsPerBlock ? warp_totals[lane] : 0;
#pragma unroll
        for (int offset = 1; offset < kWarpsPerBlock; offset <<= 1) {
            const int32_t up = __shfl_up_sync(0xffffffffu, w, offset);
            if (lane >= offset) w += up;
        }
        if (lane < kWarpsPerBlock) warp_totals[lane] = w;  // inclusive over warps
    }
    __syncthreads();
    const int32_t before_warp = warp == 0 ? 0 : warp_totals[warp - 1];
    *total = warp_totals[kWarpsPerBlock - 1];
    const int32_t result = before_warp + inclusive - value;
    __syncthreads();  // warp_totals may be reused right after
    return result;
}

}  // namespace alphamoe

#endif
