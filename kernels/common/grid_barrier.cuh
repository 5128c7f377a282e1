// A grid-wide barrier for co-resident (cooperatively launched) grids, kept in
// the caller's workspace: an arrival count that the last CTA resets and a
// generation word it advances. Both stay valid between calls, so the
// workspace needs zeroing only once.
#ifndef ALPHAMOE_KERNELS_GRID_BARRIER_CUH
#define ALPHAMOE_KERNELS_GRID_BARRIER_CUH

#include <cuda/atomic>
#include <stdint.h>

#include "route_args.h"

namespace alphamoe {

__device__ __forceinline__ void grid_barrier(uint32_t *workspace, uint32_t num_ctas) {
    __syncthreads();
    if (threadIdx.x == 0) {
        cuda::atomic_ref<uint32_t, cuda::thread_scope_device> count(workspace[kWsBarrierCount]);
        cuda::atomic_ref<uint32_t, cuda::thread_scope_device> generation(
            workspace[kWsBarrierGeneration]);
        // Read before arriving: the generation cannot advance until this CTA
        // has arrived, so this is the one to wait out.
        const uint32_t current = generation.load(cuda::std::memory_order_relaxed);
        __threadfence();  // the CTA's writes, ordered by __syncthreads above
        const uint32_t arrived = count.fetch_add(1u, cuda::std::memory_order_acq_rel);
        if (arrived == num_ctas - 1u) {
            count.store(0u, cuda::std::memory_order_relaxed);
            generation.store(current + 1u, cuda::std::memory_order_release);
        } else {
            while (generation.load(cuda::std::memory_order_acquire) == current) {
            }
        }
        __threadfence();
    }
    __syncthreads();
}

}  // namespace alphamoe

#endif
