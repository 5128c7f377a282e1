// The sigmoid of a row's slots on the device, bit for bit score_math.h's
// alphamoe_sigmoid, without a branch per slot.
//
// __fdiv_rn compiles to a fast path (a reciprocal estimate, one Newton
// step, the quotient and one correction, all fused multiply-adds) behind a
// range check of its operands, with a slow path for the operands the fast
// path may round wrongly: a branch a division, which the compiler moves no
// code across, so a row's divisions ran one after the other, each waiting
// for its own chain. Here every slot takes the fast path's instructions
// with no check, and only the slots whose operands are outside a range
// where the fast path is exact divide again by __fdiv_rn, behind one branch
// for the row. That range: denominators 1 + e in [1, 2] and numerators 1,
// or e from 2^-64 up (x from about -44.36 up, far from the subnormal
// quotients the range check guards against); a slot from there down to
// -104 (whose sigmoid is the quotient) divides again; from -104 down the
// quotient is not used. The GPU test gpu_sigmoid_all_inputs checks the
// result against alphamoe_sigmoid for every one of the 2^32 inputs.
#ifndef ALPHAMOE_KERNELS_SIGMOID_SLOTS_CUH
#define ALPHAMOE_KERNELS_SIGMOID_SLOTS_CUH

#include <stdint.h>

#include "common/score_math.h"

namespace alphamoe {

// The multi-function unit's estimate of 1 / d, the fast path's first step.
__device__ __forceinline__ float reciprocal_estimate(float d) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(d));
    return y;
}

// n / d by the fast path of __fdiv_rn, its operations in its order:
// correctly rounded where that path's range check passes.
__device__ __forceinline__ float fast_path_quotient(float n, float d) {
    const float estimate = reciprocal_estimate(d);
    const float reciprocal = __fmaf_rn(estimate, __fmaf_rn(-d, estimate, 1.0f), estimate);
    const float quotient = __fmaf_rn(n, reciprocal, 0.0f);
    const float residual = __fmaf_rn(-d, quotient, n);
    return __fmaf_rn(reciprocal, residual, quotient);
}

// Whether slot x's quotient must come from __fdiv_rn: a numerator e below
// 2^-64 that the sigmoid still uses (|x| < 104).
__device__ __forceinline__ bool sigmoid_needs_division(float x, float e) {
    const uint32_t magnitude = __float_as_uint(x) & 0x7FFFFFFFu;
    return x < 0.0f && e < 0x1p-64f && magnitude < 0x42D00000u /* 104.0f */;
}

// score[i] = alphamoe_sigmoid_finish(x[i], e[i]) for every slot, with
// e[i] = alphamoe_sigmoid_exp(x[i]).
template <int S>
__device__ __forceinline__ void sigmoid_finish_slots(const float (&x)[S], const float (&e)[S], float (&score)[S]) {
    float quotient[S];
    bool divide = false;
#pragma unroll
    for (int i = 0; i < S; ++i) {
        quotient[i] = fast_path_quotient(x[i] < 0.0f ? e[i] : 1.0f, __fadd_rn(1.0f, e[i]));
        divide |= sigmoid_needs_division(x[i], e[i]);
    }
    if (divide) {
#pragma unroll
        for (int i = 0; i < S; ++i)
            if (sigmoid_needs_division(x[i], e[i])) quotient[i] = alphamoe_sigmoid_quotient(x[i], e[i]);
    }
#pragma unroll
    for (int i = 0; i < S; ++i) score[i] = alphamoe_sigmoid_from_quotient(x[i], quotient[i]);
}

}  // namespace alphamoe

#endif
