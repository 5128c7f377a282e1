// Cheap bounds on the sqrt-softplus: lo <= alphamoe_sqrt_softplus(x) <= hi
// (score_math.h) for every fp32 x, from the multi-function unit's
// estimates of the exponential, the logarithm and the root (a handful of
// instructions where the exact score takes dozens). A warp ranking biased
// keys takes these for every expert and the exact score only for the few
// experts whose bounds reach the chosen ones' (flavour.cuh,
// warp_rank_biased_by_bounds). The estimates' errors are far below the
// margin (about 2^-17 relative at worst, from the rounded argument of the
// exponential); the GPU test gpu_score_bounds_all_inputs checks both
// bounds against the exact score for every one of the 2^32 inputs. NaN
// gives NaN bounds, as its score is NaN; +-inf give their exact scores.
#ifndef ALPHAMOE_KERNELS_SCORE_BOUNDS_CUH
#define ALPHAMOE_KERNELS_SCORE_BOUNDS_CUH

#include <math.h>

namespace alphamoe {

// The margin: relative, and absolute for results near or below the
// smallest normal, where the estimates may flush or lose bits.
constexpr float kScoreBoundRelative = 0x1p-12f;
constexpr float kScoreBoundAbsolute = 0x1p-120f;

__device__ __forceinline__ float exp2_estimate(float t) {
    float y;
    asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(t));
    return y;
}
__device__ __forceinline__ float log2_estimate(float t) {
    float y;
    asm("lg2.approx.f32 %0, %1;" : "=f"(y) : "f"(t));
    return y;
}
__device__ __forceinline__ float sqrt_estimate(float t) {
    float y;
    asm("sqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(t));
    return y;
}

// An estimate of alphamoe_sqrt_softplus(x): sqrt(x) above 20, e^(x/2)
// below -20, else sqrt(max(x, 0) + log(1 + e^-|x|)), the logarithm by its
// series where e^-|x| < 1/64 (the estimate's absolute error would be large
// beside so small a logarithm).
__device__ __forceinline__ float sqrt_softplus_estimate(float x) {
    const bool below = x < -20.0f;
    const float e = exp2_estimate((below ? x * 0.5f : -fabsf(x)) * 0x1.715476p+0f);
    const float series = e * (1.0f - e * (0.5f - e * 0x1.555556p-2f));
    const float log1p_e = e < 0x1p-6f ? series : log2_estimate(1.0f + e) * 0x1.62e43p-1f;
    const float root = sqrt_estimate(x > 20.0f ? x : fmaxf(x, 0.0f) + log1p_e);
    return below ? e : root;
}

// lo and hi around the estimate (fused, so +-inf stay themselves and NaN
// stays NaN).
__device__ __forceinline__ void sqrt_softplus_bounds(float x, float &lo, float &hi) {
    const float s = sqrt_softplus_estimate(x);
    lo = __fmaf_rn(s, 1.0f - kScoreBoundRelative, -kScoreBoundAbsolute);
    hi = __fmaf_rn(s, 1.0f + kScoreBoundRelative, kScoreBoundAbsolute);
}

}  // namespace alphamoe

#endif
