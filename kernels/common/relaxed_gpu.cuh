// Relaxed, device-scope accesses to global memory: each one atomic and
// coherent across SMs (never served from a stale L1 line), with no ordering
// against the thread's other accesses, so none costs a fence. For words
// that say by themselves whether they are complete.
#ifndef ALPHAMOE_KERNELS_RELAXED_GPU_CUH
#define ALPHAMOE_KERNELS_RELAXED_GPU_CUH

#include <stdint.h>

namespace alphamoe {

__device__ __forceinline__ uint32_t load_relaxed(const uint32_t *p) {
    uint32_t v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}

// load_relaxed(p) if i < n, else `otherwise`. The comparison happens
// inside, as the load's own predicate. So the address is formed whether or
// not the load runs: the compiler cannot sink it into a branch and rebuild
// it there, per load. And no comparison outlives its load: for a row of
// loads, results computed outside would be packed into the bits of one
// register, an instruction each.
__device__ __forceinline__ uint32_t load_relaxed_if_below(int32_t i, int32_t n, const uint32_t *p,
                                                          uint32_t otherwise) {
    uint32_t v = otherwise;
    asm volatile(
        "{\n\t.reg .pred q;\n\tsetp.lt.s32 q, %2, %3;\n\t@q ld.relaxed.gpu.global.u32 %0, [%1];\n\t}"
        : "+r"(v)
        : "l"(p), "r"(i), "r"(n));
    return v;
}

__device__ __forceinline__ void store_relaxed(uint32_t *p, uint32_t v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// An atomic addition whose result is not needed (a reduction: the thread
// does not wait for it).
__device__ __forceinline__ void add_relaxed(uint32_t *p, uint32_t v) {
    asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

}  // namespace alphamoe

#endif
