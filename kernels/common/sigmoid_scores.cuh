// The sigmoid of sigmoid scoring on the device, bit for bit
// alphamoe_sigmoid (score_math.h) for every input, with no branch: the
// division's slow path, which the compiler emits as a branch it moves no
// code across, is never needed for the operands this division gets.
// test_gpu_sigmoid checks the equality over all 2^32 inputs.
#ifndef ALPHAMOE_KERNELS_SIGMOID_SCORES_CUH
#define ALPHAMOE_KERNELS_SIGMOID_SCORES_CUH

#include <stdint.h>

#include "common/score_math.h"

namespace alphamoe {

// n / d rounded to nearest even, for d in (1, 2] and n in [2^-25, 1]: an
// approximate reciprocal, one correction of it, the quotient and one
// correction of that, each rounded once (the sequence nvcc emits for an
// IEEE division before its range check). Here no intermediate is
// subnormal and nothing overflows, which is all the range check is for.
__device__ __forceinline__ float divide_near_one(float n, float d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    r = __fmaf_rn(r, __fmaf_rn(-d, r, 1.0f), r);
    const float q = __fmul_rn(n, r);
    return __fmaf_rn(r, __fmaf_rn(-d, q, n), q);
}

// alphamoe_sigmoid_finish(x, e) without a branch. Its division is
// n / (1 + e) with n = e or 1: when 1 + e rounds to 1 (e <= 2^-24, which
// covers every subnormal e) the quotient is n itself, exactly; otherwise
// n > 2^-25 and 1 + e is in (1, 2], the operands of divide_near_one.
__device__ __forceinline__ float sigmoid_finish_near_one(float x, float e) {
    const uint32_t bits = __float_as_uint(x);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    const bool negative = x < 0.0f;
    const float n = negative ? e : 1.0f;
    const float d = __fadd_rn(1.0f, e);
    const float quotient = d == 1.0f ? n : divide_near_one(n, d);
    const float finite = magnitude >= 0x42D00000u /* 104.0f */ ? (negative ? 0.0f : 1.0f) : quotient;
    return magnitude > 0x7F800000u ? __uint_as_float(bits | 0x00400000u) : finite;
}

__device__ __forceinline__ float sigmoid_score(float x) {
    return sigmoid_finish_near_one(x, alphamoe_sigmoid_exp(x));
}

// The sigmoids of a lane's S values: every exponential first, then every
// quotient, so the values' chains of dependent operations overlap.
template <int S>
__device__ __forceinline__ void sigmoid_scores(const float (&x)[S], float (&score)[S]) {
    float e[S];
#pragma unroll
    for (int i = 0; i < S; ++i) e[i] = alphamoe_sigmoid_exp(x[i]);
#pragma unroll
    for (int i = 0; i < S; ++i) score[i] = sigmoid_finish_near_one(x[i], e[i]);
}

}  // namespace alphamoe

#endif
