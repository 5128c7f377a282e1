// A grid-wide barrier for co-resident (cooperatively launched) grids, kept in
// one word of the caller's workspace (`barrier_word`). CTA 0 adds
// 2^31 - (n - 1) and every other CTA 1, so the n arrivals add exactly 2^31:
// the word's top bit flips when the last CTA arrives, and at no other time,
// and its low 31 bits are back where they were. Each CTA waits for the flip
// with one atomic and one spin; there is no count to reset and no
// generation to read first, and the word stays valid between calls, so the
// workspace needs zeroing only once.
#ifndef ALPHAMOE_KERNELS_GRID_BARRIER_CUH
#define ALPHAMOE_KERNELS_GRID_BARRIER_CUH

#include <cuda/atomic>
#include <stdint.h>

namespace alphamoe {

__device__ __forceinline__ void grid_barrier(uint32_t *barrier_word, uint32_t num_ctas) {
    __syncthreads();
    if (threadIdx.x == 0) {
        cuda::atomic_ref<uint32_t, cuda::thread_scope_device> word(*barrier_word);
        const uint32_t arrival = blockIdx.x == 0 ? 0x80000000u - (num_ctas - 1u) : 1u;
        // Release: the CTA's writes, ordered before this by __syncthreads.
        const uint32_t before = word.fetch_add(arrival, cuda::std::memory_order_release);
        while (((word.load(cuda::std::memory_order_relaxed) ^ before) & 0x80000000u) == 0u) {
        }
        // Acquire every CTA's writes, for the whole CTA (__syncthreads below).
        cuda::atomic_thread_fence(cuda::std::memory_order_acquire, cuda::thread_scope_device);
    }
    __syncthreads();
}

}  // namespace alphamoe

#endif
