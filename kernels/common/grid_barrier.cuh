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

// Brings the barrier's words into L2 ahead of the barrier: after a cold
// start they are in DRAM, and the load of the generation would otherwise
// wait a DRAM round trip while the whole CTA stands at the barrier.
__device__ __forceinline__ void prefetch_grid_barrier(const uint32_t *workspace) {
    if (threadIdx.x == 0) asm volatile("prefetch.global.L2 [%0];" ::"l"(workspace + kWsBarrierCount));
}

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
