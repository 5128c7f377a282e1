/*
 * Division by a value the host knows before the launch (block_m, the large
 * kernel's CTA group size) with a multiply and a shift. The kernels divide
 * by these in code that runs once per call, whose size costs more than its
 * instructions (fetched with L2 cold, every 256 bytes of code is a wait): a
 * 32-bit division by a run-time value is about 25 instructions, this is 3.
 * The host makes each divisor once per call.
 *
 * For 1 <= d <= 2^30, l = ceil(log2 d) and m = ceil(2^(31+l) / d), every
 * 0 <= n < 2^31 has floor(n / d) = floor(n * m / 2^(31+l)) (Granlund and
 * Montgomery, "Division by invariant integers using multiplication",
 * theorem 4.2 with N = 31: m * d - 2^(31+l) < d <= 2^l), and m < 2^32. The
 * product's high word is taken with 2n as the factor, so n * m / 2^31
 * needs no 64-bit shift.
 *
 * Plain C99 and C++: the tests include it too.
 */
#ifndef ALPHAMOE_KERNELS_DIVISOR_H
#define ALPHAMOE_KERNELS_DIVISOR_H

#include <stdint.h>

#if defined(__CUDACC__)
#define ALPHAMOE_DIVISOR_FN static __host__ __device__ __forceinline__
#else
#define ALPHAMOE_DIVISOR_FN static inline
#endif

typedef struct alphamoe_divisor {
    uint32_t magic;  /* m */
    uint32_t shift;  /* l */
} alphamoe_divisor;

/* 1 <= d <= 2^30. */
ALPHAMOE_DIVISOR_FN alphamoe_divisor alphamoe_divisor_of(uint32_t d) {
    uint32_t l = 0;
    while ((UINT32_C(1) << l) < d) ++l;
    alphamoe_divisor v;
    v.magic = (uint32_t)(((UINT64_C(1) << (31 + l)) + d - 1) / d);
    v.shift = l;
    return v;
}

/* floor(n / d) for 0 <= n < 2^31. */
ALPHAMOE_DIVISOR_FN uint32_t alphamoe_divide(uint32_t n, alphamoe_divisor v) {
#if defined(__CUDA_ARCH__)
    return __umulhi(n << 1, v.magic) >> v.shift;
#else
    return (uint32_t)(((uint64_t)(n << 1) * v.magic) >> 32) >> v.shift;
#endif
}

#endif
