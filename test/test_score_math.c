/* The scoring arithmetic the kernels and the host reference share
 * (kernels/common/score_math.h): the sigmoid and sqrt-softplus against
 * float64 over a sweep of every binade plus special values, exact bf16 and fp16 conversion of
 * all 65536 bit patterns against a decoding written from the formats'
 * definitions, and the library's host reference computing the very same
 * bits (a sigmoid- or sqrt-softplus-scored router with one expert outputs
 * the score of its logit as its weight; a bf16 or fp16 router routes exactly like an fp32 router fed
 * the decoded values). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/score_math.h"
#include "flavour_reference.h"
#include "logits_types.h"
#include "test_support.h"

/* The accuracy score_math.h states for its sigmoid and sqrt-softplus. */
#define SIGMOID_MAX_ULP 2.5
#define SQRT_SOFTPLUS_MAX_ULP 2.0

static uint32_t float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* The spacing of binary32 numbers at v (v >= 0), never below the smallest
 * subnormal. */
static double ulp_at(double v) {
    int e;
    frexp(v, &e);
    const double u = ldexp(1.0, e - 24);
    return u > ldexp(1.0, -149) ? u : ldexp(1.0, -149);
}

static double exact_sigmoid(float x) { return 1.0 / (1.0 + exp(-(double)x)); }

/* Checks one input against float64 and the exact rules; returns the error
 * in ulp. */
static double check_sigmoid(float x) {
    const float s = alphamoe_sigmoid(x);
    const uint32_t xb = float_bits(x), sb = float_bits(s);
    if (isnan(x)) {
        if (!isnan(s) || sb != (xb | 0x00400000u))
            fail_msg("sigmoid(NaN 0x%08x) = 0x%08x, want the quieted input 0x%08x", xb, sb, xb | 0x00400000u);
        return 0.0;
    }
    if (!(s >= 0.0f && s <= 1.0f) || sb == 0x80000000u)
        fail_msg("sigmoid(%.9g [0x%08x]) = %.9g [0x%08x]: outside [+0, 1]", x, xb, s, sb);
    if (x >= 104.0f && s != 1.0f) fail_msg("sigmoid(%.9g) = %.9g, want exactly 1", x, s);
    if (x <= -104.0f && sb != 0u) fail_msg("sigmoid(%.9g) = %.9g, want exactly +0", x, s);
    const double want = exact_sigmoid(x);
    const double err = fabs((double)s - want) / ulp_at(want);
    if (!(err <= SIGMOID_MAX_ULP))
        fail_msg("sigmoid(%.9g [0x%08x]) = %.9g, float64 %.17g: %.3f ulp > %.1f", x, xb, s, want, err,
                 SIGMOID_MAX_ULP);
    return err;
}

/* sqrt(log(1 + e^x)) in float64, without cancellation for x > 0. */
static double exact_sqrt_softplus(float x) {
    const double d = x;
    return sqrt(d > 0.0 ? d + log1p(exp(-d)) : log1p(exp(d)));
}

/* Checks one input against float64 and the exact rules; returns the error
 * in ulp. */
static double check_sqrt_softplus(float x) {
    const float s = alphamoe_sqrt_softplus(x);
    const uint32_t xb = float_bits(x), sb = float_bits(s);
    if (isnan(x)) {
        if (!isnan(s) || sb != (xb | 0x00400000u))
            fail_msg("sqrt_softplus(NaN 0x%08x) = 0x%08x, want the quieted input 0x%08x", xb, sb, xb | 0x00400000u);
        return 0.0;
    }
    if (!(s >= 0.0f) || sb == 0x80000000u || (isinf(s) && !isinf(x)))
        fail_msg("sqrt_softplus(%.9g [0x%08x]) = %.9g [0x%08x]: not in [+0, inf) or infinite", x, xb, s, sb);
    if (x == INFINITY) {
        if (!isinf(s)) fail_msg("sqrt_softplus(+inf) = %.9g, want +inf", s);
        return 0.0;
    }
    if (x <= -208.0f && sb != 0u) fail_msg("sqrt_softplus(%.9g) = %.9g, want exactly +0", x, s);
    if (x > 20.0f && s != sqrtf(x)) fail_msg("sqrt_softplus(%.9g) = %.9g, want sqrt(x) %.9g", x, s, sqrtf(x));
    const double want = exact_sqrt_softplus(x);
    const double err = fabs((double)s - want) / ulp_at(want);
    if (!(err <= SQRT_SOFTPLUS_MAX_ULP))
        fail_msg("sqrt_softplus(%.9g [0x%08x]) = %.9g, float64 %.17g: %.3f ulp > %.1f", x, xb, s, want, err,
                 SQRT_SOFTPLUS_MAX_ULP);
    return err;
}

static const uint32_t kSpecialBits[] = {
    0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, /* zeros, infinities */
    0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FBFFFFFu, 0x7FC12345u, /* NaNs */
    0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu, 0x00800000u, 0x80800000u, /* subnormal edges */
    0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F800000u, 0xBF800000u,                         /* largest, +-1 */
    0x42D00000u, 0xC2D00000u, 0x42CFFFFFu, 0xC2CFFFFFu,                         /* +-104 and below */
    0x41880000u, 0x418A0000u, 0xC1880000u, 0xC2AE0000u, 0xC2B00000u, 0xC2CE0000u, /* 17, 17.25, -17, -87, -88, -103 */
    0x3EB17218u, 0xBEB17218u, 0x3F317218u, 0xBF317218u,                         /* +-ln2/2, +-ln2 */
    0x33800000u, 0xB3800000u, 0x2F800000u,                                      /* 2^-24, -2^-24, 2^-32 */
    0x41A00000u, 0xC1A00000u, 0x41A00001u, 0xC1A00001u, 0x419FFFFFu, 0xC19FFFFFu, /* +-20 and neighbours */
    0xC3500000u, 0xC34FFFFFu, 0xC34FF0A4u, 0xC32EB333u, 0xC3310000u,             /* -208, below, -207.94, -174.7, -177 */
    0xC2AEAE14u, 0xC2B00000u, 0x4B000000u, 0x5F800000u,                         /* -87.34, -88, 2^23, 2^64 */
};

static void test_sigmoid_special_values(void **state) {
    (void)state;
    assert_true(float_bits(alphamoe_sigmoid(0.0f)) == float_bits(0.5f));
    assert_true(float_bits(alphamoe_sigmoid(-0.0f)) == float_bits(0.5f));
    assert_true(float_bits(alphamoe_sigmoid(INFINITY)) == float_bits(1.0f));
    assert_true(float_bits(alphamoe_sigmoid(-INFINITY)) == 0u);
    for (size_t i = 0; i < sizeof kSpecialBits / sizeof kSpecialBits[0]; ++i) check_sigmoid(bits_to_float(kSpecialBits[i]));
}

/* Every 4099th bit pattern (about a million, every binade and sign) and a
 * million random ones. */
static void test_sigmoid_accuracy(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xA001);
    double worst = 0.0;
    for (uint64_t b = rng_below(&rng, 4099); b <= 0xFFFFFFFFull; b += 4099) {
        const double e = check_sigmoid(bits_to_float((uint32_t)b));
        if (e > worst) worst = e;
    }
    for (int i = 0; i < 1000000; ++i) {
        /* Half of them where the result is neither 0 nor 1. */
        const float x = i % 2 ? rng_uniform(&rng, -110.0f, 20.0f) : bits_to_float((uint32_t)rng_next(&rng));
        const double e = check_sigmoid(x);
        if (e > worst) worst = e;
    }
    print_message("# sigmoid: largest error %.3f ulp (allowed %.1f)\n", worst, SIGMOID_MAX_ULP);
}

static void test_sqrt_softplus_special_values(void **state) {
    (void)state;
    assert_true(float_bits(alphamoe_sqrt_softplus(INFINITY)) == float_bits(INFINITY));
    assert_true(float_bits(alphamoe_sqrt_softplus(-INFINITY)) == 0u);
    assert_true(float_bits(alphamoe_sqrt_softplus(-0.0f)) == float_bits(alphamoe_sqrt_softplus(0.0f)));
    assert_true(float_bits(alphamoe_sqrt_softplus(3.0e38f)) == float_bits(sqrtf(3.0e38f)));
    /* A positive normal result down to x = -174.7, where computing
     * log(1 + e^x) first underflows from -87 on. */
    assert_true(fpclassify(alphamoe_sqrt_softplus(-174.0f)) == FP_NORMAL);
    for (size_t i = 0; i < sizeof kSpecialBits / sizeof kSpecialBits[0]; ++i)
        check_sqrt_softplus(bits_to_float(kSpecialBits[i]));
}

/* As for the sigmoid; the GPU test gpu_sqrt_softplus_all_inputs checks
 * every one of the 2^32 inputs. */
static void test_sqrt_softplus_accuracy(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xA004);
    double worst = 0.0;
    for (uint64_t b = rng_below(&rng, 4099); b <= 0xFFFFFFFFull; b += 4099) {
        const double e = check_sqrt_softplus(bits_to_float((uint32_t)b));
        if (e > worst) worst = e;
    }
    for (int i = 0; i < 1000000; ++i) {
        const float x = i % 2 ? rng_uniform(&rng, -220.0f, 30.0f) : bits_to_float((uint32_t)rng_next(&rng));
        const double e = check_sqrt_softplus(x);
        if (e > worst) worst = e;
    }
    print_message("# sqrt-softplus: largest error %.3f ulp (allowed %.1f)\n", worst, SQRT_SOFTPLUS_MAX_ULP);
}

/* A router with one expert, a per-expert scoring and no renormalization
 * writes the score of its logit itself as the weight (0 for NaN): the host
 * reference computes the shared formula's bits. */
static void check_score_in_host_reference(int32_t scoring, uint64_t salt) {
    test_rng rng;
    rng_seed_for_test(&rng, salt);
    enum { N = 1 << 18 };
    const int32_t n_special = (int32_t)(sizeof kSpecialBits / sizeof kSpecialBits[0]);
    float *logits = malloc(N * sizeof *logits);
    assert_non_null(logits);
    for (int32_t i = 0; i < N; ++i)
        logits[i] = i < n_special ? bits_to_float(kSpecialBits[i])
                    : i % 3     ? rng_uniform(&rng, -220.0f, 40.0f)
                                : bits_to_float((uint32_t)rng_next(&rng));
    alphamoe_params p = test_params(1, 1, 1 + (int32_t)rng_below(&rng, 64), N, ALPHAMOE_FLAG_NO_RENORMALIZE);
    p.scoring = scoring;
    alphamoe_router *r = NULL;
    assert_int_equal(alphamoe_router_create(&p, &r), ALPHAMOE_OK);
    host_plan plan;
    assert_int_equal(host_plan_alloc(&plan, r, 0), 0);
    host_plan_poison(&plan);
    assert_int_equal(alphamoe_route_host(r, N, logits, &plan.buffers), ALPHAMOE_OK);
    for (int32_t i = 0; i < N; ++i) {
        const float score = scoring == ALPHAMOE_SCORING_SIGMOID ? alphamoe_sigmoid(logits[i])
                                                                : alphamoe_sqrt_softplus(logits[i]);
        /* NaN weighs 0; an infinite score (sqrt-softplus of +inf) is the
         * largest float. */
        const float want = isnan(logits[i]) ? 0.0f : isinf(score) ? FLT_MAX : score;
        if (float_bits(plan.topk_weights[i]) != float_bits(want))
            fail_msg("%s, logit %.9g [0x%08x]: weight 0x%08x, the shared formula gives 0x%08x",
                     scoring_name(scoring), logits[i], float_bits(logits[i]), float_bits(plan.topk_weights[i]),
                     float_bits(want));
        if (plan.topk_ids[i] != 0) fail_msg("token %d: id %d", i, plan.topk_ids[i]);
    }
    host_plan_free(&plan);
    alphamoe_router_destroy(r);
    free(logits);
}

static void test_sigmoid_in_host_reference(void **state) {
    (void)state;
    check_score_in_host_reference(ALPHAMOE_SCORING_SIGMOID, 0xA002);
}

static void test_sqrt_softplus_in_host_reference(void **state) {
    (void)state;
    check_score_in_host_reference(ALPHAMOE_SCORING_SQRT_SOFTPLUS, 0xA005);
}

/* ------------------------------------------------------------ bf16, fp16 */

static void check_conversion(const char *name, float (*library)(uint16_t), float (*definition)(uint16_t),
                             int is_f16) {
    int nans = 0, subnormals = 0;
    for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
        const float got = library((uint16_t)h), want = definition((uint16_t)h);
        if (isnan(want)) {
            ++nans;
            /* A NaN stays a NaN of the same sign; a quiet one stays quiet. */
            const int quiet = is_f16 ? (h & 0x200u) != 0 : (h & 0x40u) != 0;
            if (!isnan(got) || signbit(got) != signbit(want) || ((float_bits(got) & 0x00400000u) != 0) != quiet)
                fail_msg("%s 0x%04x (NaN): converted to 0x%08x", name, h, float_bits(got));
            continue;
        }
        if (float_bits(got) != float_bits(want))
            fail_msg("%s 0x%04x: converted to %.9g [0x%08x], the format defines %.9g [0x%08x]", name, h, got,
                     float_bits(got), want, float_bits(want));
        subnormals += fpclassify(want) == FP_SUBNORMAL || (is_f16 && (h & 0x7C00u) == 0 && (h & 0x3FFu) != 0);
    }
    print_message("# %s: 65536 patterns exact (%d NaN, %d subnormal in the source format)\n", name, nans,
                  subnormals);
}

static void test_bf16_all_patterns(void **state) {
    (void)state;
    check_conversion("bf16", alphamoe_bf16_to_float, bf16_value, 0);
}

static void test_f16_all_patterns(void **state) {
    (void)state;
    check_conversion("fp16", alphamoe_f16_to_float, f16_value, 1);
}

/* Every bit pattern of the type as logits: a bf16 / fp16 router must route
 * bitwise like an fp32 router fed the defined values, under each scoring,
 * with and without renormalization (which makes every weight depend on the
 * whole row). */
static void check_typed_router(int32_t type) {
    enum { E = 512, ROWS = 65536 / E };
    uint16_t *typed = malloc(65536 * sizeof *typed);
    float *values = malloc(65536 * sizeof *values);
    assert_true(typed && values);
    test_rng rng;
    rng_seed_for_test(&rng, 0xA003 + (uint64_t)type);
    /* Every pattern once, in a shuffled order so each row mixes kinds. */
    for (uint32_t i = 0; i < 65536; ++i) typed[i] = (uint16_t)i;
    for (uint32_t i = 65535; i > 0; --i) {
        const uint32_t j = rng_below(&rng, i + 1);
        const uint16_t t = typed[i];
        typed[i] = typed[j];
        typed[j] = t;
    }
    for (uint32_t i = 0; i < 65536; ++i) values[i] = type == ALPHAMOE_LOGITS_BF16 ? bf16_value(typed[i]) : f16_value(typed[i]);
    const struct {
        int32_t scoring;
        uint32_t flags;
    } flavours[] = {{ALPHAMOE_SCORING_SOFTMAX, 0u},
                    {ALPHAMOE_SCORING_SOFTMAX, ALPHAMOE_FLAG_NO_RENORMALIZE},
                    {ALPHAMOE_SCORING_SIGMOID, 0u},
                    {ALPHAMOE_SCORING_SIGMOID, ALPHAMOE_FLAG_NO_RENORMALIZE},
                    {ALPHAMOE_SCORING_SQRT_SOFTPLUS, 0u},
                    {ALPHAMOE_SCORING_SQRT_SOFTPLUS, ALPHAMOE_FLAG_NO_RENORMALIZE}};
    for (size_t f = 0; f < sizeof flavours / sizeof flavours[0]; ++f) {
        alphamoe_params p = test_params(E, 16, 16, ROWS, flavours[f].flags);
        p.scoring = flavours[f].scoring;
        alphamoe_router *r32 = NULL, *r16 = NULL;
        assert_int_equal(alphamoe_router_create(&p, &r32), ALPHAMOE_OK);
        p.logits_type = type;
        assert_int_equal(alphamoe_router_create(&p, &r16), ALPHAMOE_OK);
        host_plan a, b;
        assert_int_equal(host_plan_alloc(&a, r32, 1), 0);
        assert_int_equal(host_plan_alloc(&b, r16, 1), 0);
        host_plan_poison(&a);
        host_plan_poison(&b);
        assert_int_equal(alphamoe_route_host(r32, ROWS, values, &a.buffers), ALPHAMOE_OK);
        assert_int_equal(alphamoe_route_host(r16, ROWS, typed, &b.buffers), ALPHAMOE_OK);
        char why[384];
        /* Tolerance 0: the weights too must be bit for bit the same. */
        if (compare_plans(&a, &b, ROWS, 0.0f, why, sizeof why) != 0)
            fail_msg("%s router, scoring %d flags 0x%x: differs from fp32 on the defined values: %s",
                     logits_type_name(type), flavours[f].scoring, flavours[f].flags, why);
        host_plan_free(&a);
        host_plan_free(&b);
        alphamoe_router_destroy(r32);
        alphamoe_router_destroy(r16);
    }
    free(typed);
    free(values);
}

static void test_bf16_router_equals_fp32(void **state) {
    (void)state;
    check_typed_router(ALPHAMOE_LOGITS_BF16);
}

static void test_f16_router_equals_fp32(void **state) {
    (void)state;
    check_typed_router(ALPHAMOE_LOGITS_F16);
}

int main(void) {
    test_base_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigmoid_special_values),
        cmocka_unit_test(test_sigmoid_accuracy),
        cmocka_unit_test(test_sigmoid_in_host_reference),
        cmocka_unit_test(test_sqrt_softplus_special_values),
        cmocka_unit_test(test_sqrt_softplus_accuracy),
        cmocka_unit_test(test_sqrt_softplus_in_host_reference),
        cmocka_unit_test(test_bf16_all_patterns),
        cmocka_unit_test(test_f16_all_patterns),
        cmocka_unit_test(test_bf16_router_equals_fp32),
        cmocka_unit_test(test_f16_router_equals_fp32),
    };
    return cmocka_run_group_tests_name("score_math", tests, NULL, NULL);
}
