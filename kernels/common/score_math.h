/*
 * Scoring arithmetic whose results must agree bit for bit between the
 * kernels and the CPU reference: the exact conversion of bf16 and fp16
 * logits to fp32, the sigmoid of sigmoid scoring, the square root of the
 * softplus of sqrt-softplus scoring, the bias-corrected ranking key and
 * the score of an expert group.
 *
 * A ranking that depends on a computed value is reproducible only if both
 * sides compute that value with the same operations in the same order, so
 * everything here is written with IEEE-754 binary32 add, multiply, fused
 * multiply-add and divide, each rounded to nearest even, and integer bit
 * manipulation: no libm function (expf differs between glibc and CUDA) and
 * no operation a compiler could contract or reassociate. On the device the
 * _rn intrinsics pin each operation; on the host every operation is a
 * separate statement of a translation unit built with -ffp-contract=off,
 * and fused multiply-adds are explicit fmaf calls. Denormals are kept on
 * both sides: kernels using this file must not be built with
 * -ftz=true or --use_fast_math.
 *
 * Plain C99 and C++: the tests include it too.
 */
#ifndef ALPHAMOE_KERNELS_SCORE_MATH_H
#define ALPHAMOE_KERNELS_SCORE_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define ALPHAMOE_SCORE_FN static __host__ __device__ __forceinline__
#else
#define ALPHAMOE_SCORE_FN static inline
#endif

/* ---- single IEEE operations, rounded to nearest even ---- */

ALPHAMOE_SCORE_FN uint32_t alphamoe_float_bits(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

ALPHAMOE_SCORE_FN float alphamoe_bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

ALPHAMOE_SCORE_FN float alphamoe_fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

ALPHAMOE_SCORE_FN float alphamoe_fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

ALPHAMOE_SCORE_FN float alphamoe_ffma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return fmaf(a, b, c);
#endif
}

ALPHAMOE_SCORE_FN float alphamoe_fdiv(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

ALPHAMOE_SCORE_FN float alphamoe_fsqrt(float a) {
#if defined(__CUDA_ARCH__)
    return __fsqrt_rn(a);
#else
    return sqrtf(a); /* correctly rounded, as IEEE-754 requires of it */
#endif
}

/* ---- logits of other types: exact conversion to fp32 ---- */

/* bf16 is the upper half of an fp32: every value, NaN payloads included,
 * converts exactly. */
ALPHAMOE_SCORE_FN float alphamoe_bf16_to_float(uint16_t h) { return alphamoe_bits_float((uint32_t)h << 16); }

/* IEEE binary16 to binary32, exact for every value: signed zeros,
 * subnormals (scaled up exactly), normals, infinities; a NaN keeps its sign
 * and its payload in the top payload bits, so a quiet NaN stays quiet. */
ALPHAMOE_SCORE_FN float alphamoe_f16_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1Fu;
    const uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0x1Fu) return alphamoe_bits_float(sign | 0x7F800000u | (mantissa << 13));
    if (exponent == 0u) {
        /* mantissa * 2^-24: the integer and the power of two are exact in
         * fp32, so is their product. */
        const float magnitude = alphamoe_fmul((float)mantissa, 0x1p-24f);
        return alphamoe_bits_float(sign | alphamoe_float_bits(magnitude));
    }
    return alphamoe_bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/* ---- sigmoid ---- */

/* e^t for t in [-104, 0]. Range reduction t = n ln2 + r with n = round(t /
 * ln2) (ties to even) and |r| <= ln2 / 2, e^r by its Taylor polynomial of
 * degree 7 (truncation below 2^-27 relative) evaluated by Horner's rule
 * with fused multiply-adds, then the exact scaling by 2^n. The constants
 * are binary32 values written exactly (hexadecimal). */
ALPHAMOE_SCORE_FN float alphamoe_exp_nonpositive(float t) {
    /* Adding 1.5 * 2^23 rounds to an integer; in that binade the integer
     * is the difference of the bit patterns. */
    const float round_magic = 0x1.8p+23f;
    const float shifted = alphamoe_ffma(t, 0x1.715476p+0f /* log2(e) */, round_magic);
    const float n = alphamoe_fadd(shifted, -round_magic); /* in [-150, 0] */
    /* ln2 split in two: n * ln2_hi is exact and so is t - n * ln2_hi. */
    float r = alphamoe_ffma(n, -0x1.62e4p-1f, t);
    r = alphamoe_ffma(n, -0x1.7f7d1cp-20f, r);
    float p = 0x1.a01a02p-13f;                /* 1/7! */
    p = alphamoe_ffma(p, r, 0x1.6c16c2p-10f); /* 1/6! */
    p = alphamoe_ffma(p, r, 0x1.111112p-7f);  /* 1/5! */
    p = alphamoe_ffma(p, r, 0x1.555556p-5f);  /* 1/4! */
    p = alphamoe_ffma(p, r, 0x1.555556p-3f);  /* 1/3! */
    p = alphamoe_ffma(p, r, 0.5f);
    p = alphamoe_ffma(p, r, 1.0f);
    p = alphamoe_ffma(p, r, 1.0f);
    int32_t exponent = (int32_t)(alphamoe_float_bits(shifted) - alphamoe_float_bits(round_magic));
    if (exponent < -126) {
        /* 2^n is subnormal: scale in two exact-then-rounded-once steps. */
        p = alphamoe_fmul(p, 0x1p-64f);
        exponent += 64;
    }
    return alphamoe_fmul(p, alphamoe_bits_float((uint32_t)(exponent + 127) << 23));
}

/* 1 / (1 + e^-x), within 2.5 ulp of the exact value for every finite x
 * (2.40 ulp at most over all 2^32 inputs; subnormal results in units of
 * the smallest subnormal). Not monotone at the last bit: neighbouring
 * inputs can give results one ulp apart in the wrong order, so nothing may
 * assume sigmoid(a) >= sigmoid(b) from a > b. Exactly: sigmoid(+-0) = 0.5,
 * sigmoid(+inf) = 1, sigmoid(-inf) = +0, 1 for x >= 104 and +0 for x <= -104
 * (the exact values round there), and a NaN gives the same NaN with its
 * quiet bit set. Never -0.0. With e = e^-|x|: 1 / (1 + e) for x >= 0
 * (-0.0 included), e / (1 + e) for x < 0, so neither side cancels.
 *
 * In two steps, so that a kernel scoring many logits can take the first
 * step for all of them before the second: the first has no branch, and
 * the steps of different logits overlap, where whole sigmoids one after
 * the other would each wait for their own chain of dependent operations
 * (each division's rarely taken slow path is a branch the compiler does
 * not move code across). */

/* Step one: e^-|x|, with |x| clamped to 104 (NaN too), from where on
 * step two does not use it. */
ALPHAMOE_SCORE_FN float alphamoe_sigmoid_exp(float x) {
    const uint32_t magnitude = alphamoe_float_bits(x) & 0x7FFFFFFFu;
    const uint32_t clamped = magnitude < 0x42D00000u /* 104.0f */ ? magnitude : 0x42D00000u;
    return alphamoe_exp_nonpositive(alphamoe_bits_float(clamped | 0x80000000u));
}

/* Step two, in two parts. The division: (x < 0 ? e : 1) / (1 + e), with
 * e = alphamoe_sigmoid_exp(x). */
ALPHAMOE_SCORE_FN float alphamoe_sigmoid_quotient(float x, float e) {
    return alphamoe_fdiv(x < 0.0f ? e : 1.0f, alphamoe_fadd(1.0f, e));
}

/* Then the sigmoid of x from that quotient. The special inputs are chosen
 * after the division rather than branched around it, so that only the
 * division's own slow path is a branch. */
ALPHAMOE_SCORE_FN float alphamoe_sigmoid_from_quotient(float x, float quotient) {
    const uint32_t bits = alphamoe_float_bits(x);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    const float finite = magnitude >= 0x42D00000u /* 104.0f */ ? (x < 0.0f ? 0.0f : 1.0f) : quotient;
    return magnitude > 0x7F800000u ? alphamoe_bits_float(bits | 0x00400000u) : finite;
}

/* Step two: the sigmoid of x from e = alphamoe_sigmoid_exp(x). */
ALPHAMOE_SCORE_FN float alphamoe_sigmoid_finish(float x, float e) {
    return alphamoe_sigmoid_from_quotient(x, alphamoe_sigmoid_quotient(x, e));
}

ALPHAMOE_SCORE_FN float alphamoe_sigmoid(float x) { return alphamoe_sigmoid_finish(x, alphamoe_sigmoid_exp(x)); }

/* ---- sqrt-softplus ---- */

/* log(1 + u) for u in [0, 1]: with s = u / (2 + u) in [0, 1/3],
 * log(1 + u) = 2 atanh(s) = 2s + 2s^3/3 + 2s^5/5 + ..., the series to
 * s^15 (the rest is below 2^-29 of the sum), Horner's rule in s^2. */
ALPHAMOE_SCORE_FN float alphamoe_log1p_unit(float u) {
    const float s = alphamoe_fdiv(u, alphamoe_fadd(2.0f, u));
    const float z = alphamoe_fmul(s, s);
    float q = 0x1.111112p-3f;                 /* 2/15 */
    q = alphamoe_ffma(q, z, 0x1.3b13b2p-3f);  /* 2/13 */
    q = alphamoe_ffma(q, z, 0x1.745d18p-3f);  /* 2/11 */
    q = alphamoe_ffma(q, z, 0x1.c71c72p-3f);  /* 2/9 */
    q = alphamoe_ffma(q, z, 0x1.24924ap-2f);  /* 2/7 */
    q = alphamoe_ffma(q, z, 0x1.99999ap-2f);  /* 2/5 */
    q = alphamoe_ffma(q, z, 0x1.555556p-1f);  /* 2/3 */
    return alphamoe_ffma(alphamoe_fmul(s, z), q, alphamoe_fadd(s, s));
}

/* sqrt(softplus(x)), softplus(x) = log(1 + e^x), within 2 ulp of the
 * exact value for every input (subnormal results in units of the smallest
 * subnormal; gpu_sqrt_softplus_all_inputs checks every one). PyTorch's
 * softplus (beta 1, threshold 20) returns x itself above 20, where
 * log(1 + e^x) - x < 2.1e-9 rounds away: so does this, sqrt(x) correctly
 * rounded. Below -20, log(1 + e^x) = e^x
 * (1 - e^x / 2 + ...) and the root is e^(x/2) within 2^-30 relative: taken
 * that way, it stays a normal number down to x = -174.7 and reaches +0
 * only where the exact value rounds to it (x <= -207.95), where
 * log(1 + e^x) computed first would underflow from -87 on. In between,
 * max(x, 0) + log(1 + e^-|x|) (no cancellation) and its correctly rounded
 * root. Exactly: +inf for +inf, +0 for -inf, a NaN gives the same NaN with
 * its quiet bit set; never -0.0, never infinite for a finite x. One
 * exponential, one division and one root for any input, no branch but the
 * division's own: the three ranges differ only in what they select. */
ALPHAMOE_SCORE_FN float alphamoe_sqrt_softplus(float x) {
    const uint32_t bits = alphamoe_float_bits(x);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    const int below = x < -20.0f; /* false for NaN */
    const float half = alphamoe_fmul(x, 0.5f);
    /* -min(|x|, 20), NaN included; or x/2, from -104 on (exp's range). */
    const float middle_t = alphamoe_bits_float((magnitude < 0x41A00000u /* 20.0f */ ? magnitude : 0x41A00000u) |
                                               0x80000000u);
    const float t = below ? (half > -104.0f ? half : -104.0f) : middle_t;
    const float e = alphamoe_exp_nonpositive(t);
    const float softplus = x > 20.0f ? x : alphamoe_fadd(x > 0.0f ? x : 0.0f, alphamoe_log1p_unit(e));
    const float root = alphamoe_fsqrt(softplus);
    const float finite = below ? (x > -208.0f ? e : 0.0f) : root;
    return magnitude > 0x7F800000u ? alphamoe_bits_float(bits | 0x00400000u) : finite;
}

/* The ranking key of sigmoid or sqrt-softplus scoring with a correction
 * bias: one rounded fp32 addition. */
ALPHAMOE_SCORE_FN float alphamoe_biased_score(float score, float bias) { return alphamoe_fadd(score, bias); }

/* The score of an expert group with a correction bias: the sum of its two
 * best keys, one rounded fp32 addition (commutative, so the order of the
 * two does not matter). */
ALPHAMOE_SCORE_FN float alphamoe_group_pair_score(float best, float second) { return alphamoe_fadd(best, second); }

#endif
