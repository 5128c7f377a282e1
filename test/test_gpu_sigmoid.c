/* The flavoured kernels' sigmoid (kernels/common/sigmoid_slots.cuh), which
 * divides by the fast path of a correctly rounded division and divides
 * again only where that path is not known to be exact, must equal
 * score_math.h's alphamoe_sigmoid bit for bit: ranking keys built from it
 * decide which experts a token gets, and the host reference computes them
 * with that function. Checked for every fp32 input against the function on
 * the device, and for random and special inputs against the host. The
 * sqrt-softplus, which the kernels call as it is, for every input against
 * float64 on the device, and for random and special ones against the
 * host. The bounds on the sqrt-softplus that rankings by bounds take, for
 * every input against the exact score. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/score_math.h"
#include "gpu_test.h"
#include "sigmoid_kernels.h"

static void gpu_sigmoid_all_inputs(void **state) {
    (void)state;
    sigmoid_sweep sweep;
    assert_int_equal(sigmoid_sweep_all_inputs(&sweep), cudaSuccess);
    printf("# sigmoid: all 4294967296 inputs, %llu mismatches, %llu slots divided again\n", sweep.mismatches,
           sweep.divided);
    if (sweep.mismatches != 0)
        fail_msg("first mismatch: input 0x%08x (%.9g): 0x%08x, alphamoe_sigmoid 0x%08x", sweep.first_mismatch,
                 (double)alphamoe_bits_float(sweep.first_mismatch), sweep.first_mismatch_bits,
                 sweep.first_expected_bits);
    /* The inputs from -104 to -44.4 divide again, about 1.2 x 2^23 of
     * them: the second division must have run. */
    assert_true(sweep.divided > (1ull << 23));
}

enum { HOST_INPUTS = 1 << 20 };

/* Inputs of every kind: any bit pattern, logit-sized values, values where
 * the sigmoid divides again, and the special values, in random order so
 * that rows mix them. */
static uint32_t random_input(test_rng *rng) {
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 104.0f, -104.0f, 44.36f, -44.37f,
                                     1e-30f, -1e-30f, 0x1p-149f, -0x1p-149f, 88.7f, -88.7f, 103.99f, -103.99f};
    switch (rng_below(rng, 4)) {
    case 0: return (uint32_t)rng_next(rng);
    case 1: return alphamoe_float_bits(rng_uniform(rng, -12.0f, 12.0f));
    case 2: return alphamoe_float_bits(rng_uniform(rng, -104.0f, -40.0f));
    default: return alphamoe_float_bits(specials[rng_below(rng, COUNT(specials))]);
    }
}

static void gpu_sigmoid_matches_host(void **state) {
    (void)state;
    test_rng rng = case_rng(0x5161);
    uint32_t *in = malloc(HOST_INPUTS * sizeof *in), *out = malloc(HOST_INPUTS * sizeof *out);
    assert_non_null(in);
    assert_non_null(out);
    for (int32_t i = 0; i < HOST_INPUTS; ++i) {
        in[i] = random_input(&rng);
        out[i] = 0x7fa00000u; /* poison: a signalling NaN, which the sigmoid never returns */
    }
    assert_int_equal(sigmoid_rows_of(in, out, HOST_INPUTS), cudaSuccess);
    for (int32_t i = 0; i < HOST_INPUTS; ++i) {
        const uint32_t expected = alphamoe_float_bits(alphamoe_sigmoid(alphamoe_bits_float(in[i])));
        if (out[i] != expected)
            fail_msg("input %d, 0x%08x (%.9g): device 0x%08x, host 0x%08x", i, in[i],
                     (double)alphamoe_bits_float(in[i]), out[i], expected);
    }
    printf("# sigmoid: %d random and special inputs equal to the host's\n", HOST_INPUTS);
    free(in);
    free(out);
}

/* The bound score_math.h states for its sqrt-softplus (test_score_math.c
 * checks it on the host over a sweep). */
#define SQRT_SOFTPLUS_MAX_ULP 2.0

static void gpu_sqrt_softplus_all_inputs(void **state) {
    (void)state;
    sqrt_softplus_sweep sweep;
    assert_int_equal(sqrt_softplus_sweep_all_inputs(SQRT_SOFTPLUS_MAX_ULP, &sweep), cudaSuccess);
    printf("# sqrt-softplus: all 4294967296 inputs, largest error %.3f ulp (allowed %.1f) at 0x%08x, %llu over\n",
           sweep.worst_ulp_milli / 1000.0, SQRT_SOFTPLUS_MAX_ULP, sweep.worst_input, sweep.over_bound);
    if (sweep.over_bound != 0)
        fail_msg("%llu inputs over the bound or breaking an exact rule; worst 0x%08x (%.9g): 0x%08x",
                 sweep.over_bound, sweep.worst_input, (double)alphamoe_bits_float(sweep.worst_input),
                 alphamoe_float_bits(alphamoe_sqrt_softplus(alphamoe_bits_float(sweep.worst_input))));
    /* Not a sweep that checked nothing: float64 and fp32 differ somewhere. */
    assert_true(sweep.worst_ulp_milli > 0);
}

/* The device's bits are the host's: the kernels and the CPU reference rank
 * by the same keys. */
static void gpu_sqrt_softplus_matches_host(void **state) {
    (void)state;
    test_rng rng = case_rng(0x5162);
    uint32_t *in = malloc(HOST_INPUTS * sizeof *in), *out = malloc(HOST_INPUTS * sizeof *out);
    assert_non_null(in);
    assert_non_null(out);
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 20.0f, -20.0f, 20.000002f, -20.000002f,
                                     -208.0f, -207.94f, -174.7f, -87.34f, 0x1p-149f, -0x1p-149f, 3e38f, -3e38f};
    for (int32_t i = 0; i < HOST_INPUTS; ++i) {
        switch (rng_below(&rng, 4)) {
        case 0: in[i] = (uint32_t)rng_next(&rng); break;
        case 1: in[i] = alphamoe_float_bits(rng_uniform(&rng, -25.0f, 25.0f)); break;
        case 2: in[i] = alphamoe_float_bits(rng_uniform(&rng, -220.0f, -15.0f)); break;
        default: in[i] = alphamoe_float_bits(specials[rng_below(&rng, COUNT(specials))]); break;
        }
        out[i] = 0x7fa00000u; /* poison: a signalling NaN, which the function never returns */
    }
    assert_int_equal(sqrt_softplus_of(in, out, HOST_INPUTS), cudaSuccess);
    for (int32_t i = 0; i < HOST_INPUTS; ++i) {
        const uint32_t expected = alphamoe_float_bits(alphamoe_sqrt_softplus(alphamoe_bits_float(in[i])));
        if (out[i] != expected)
            fail_msg("input %d, 0x%08x (%.9g): device 0x%08x, host 0x%08x", i, in[i],
                     (double)alphamoe_bits_float(in[i]), out[i], expected);
    }
    printf("# sqrt-softplus: %d random and special inputs equal to the host's\n", HOST_INPUTS);
    free(in);
    free(out);
}

/* A warp ranking biased sqrt-softplus keys takes every expert's bounds
 * and only the few experts whose bounds reach the chosen ones' exact
 * score: a score outside its bounds could drop a chosen expert. Bounds
 * that hold by being loose would make every expert a candidate: most
 * must be tight. */
static void gpu_score_bounds_all_inputs(void **state) {
    (void)state;
    score_bounds_sweep sweep;
    assert_int_equal(score_bounds_sweep_all_inputs(&sweep), cudaSuccess);
    printf("# sqrt-softplus bounds: all 4294967296 inputs, %llu outside, %llu within 2^-10 of a normal score\n",
           sweep.outside, sweep.tight);
    if (sweep.outside != 0)
        fail_msg("%llu scores outside their bounds; first input 0x%08x (%.9g)", sweep.outside, sweep.first_outside,
                 (double)alphamoe_bits_float(sweep.first_outside));
    /* Normal scores come from about 2^31 + 2^30 inputs: every positive
     * number and the negatives above about -138. */
    assert_true(sweep.tight > (1ull << 31));
}

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_sigmoid_all_inputs),
        cmocka_unit_test(gpu_sigmoid_matches_host),
        cmocka_unit_test(gpu_sqrt_softplus_all_inputs),
        cmocka_unit_test(gpu_sqrt_softplus_matches_host),
        cmocka_unit_test(gpu_score_bounds_all_inputs),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("gpu_sigmoid", tests, NULL, NULL);
}
