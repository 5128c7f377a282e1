/* The device side of test_gpu_sigmoid.c (sigmoid_kernels.cu): the
 * kernels' row sigmoid (kernels/common/sigmoid_slots.cuh) over inputs given
 * as bit patterns, and over every one of the 2^32 fp32 bit patterns against
 * score_math.h's alphamoe_sigmoid on the device; score_math.h's
 * sqrt-softplus, which the kernels call as it is, over every input against
 * float64; the bounds on the sqrt-softplus the kernels rank by before
 * scoring, over every input against the exact score. */
#ifndef ALPHAMOE_TEST_SIGMOID_KERNELS_H
#define ALPHAMOE_TEST_SIGMOID_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Inputs a thread takes as one row's slots: consecutive bit patterns, so
 * that rows mix slots that divide again with slots that do not. */
#define SIGMOID_ROW_SLOTS 8

typedef struct sigmoid_sweep {
    unsigned long long mismatches; /* inputs whose bits differ from alphamoe_sigmoid's */
    unsigned long long divided;    /* slots divided again by __fdiv_rn (sigmoid_needs_division) */
    uint32_t first_mismatch;       /* the smallest such input's bits; 0xffffffff for none */
    uint32_t first_mismatch_bits;  /* the row sigmoid's bits for a mismatching input (a diagnostic) */
    uint32_t first_expected_bits;  /* alphamoe_sigmoid's for it */
} sigmoid_sweep;

/* Every fp32 bit pattern through the row sigmoid and alphamoe_sigmoid,
 * both on the device. */
cudaError_t sigmoid_sweep_all_inputs(sigmoid_sweep *result);

/* The row sigmoid of n inputs (n a multiple of SIGMOID_ROW_SLOTS), host
 * buffers in and out. */
cudaError_t sigmoid_rows_of(const uint32_t *input_bits, uint32_t *output_bits, int32_t n);

typedef struct sqrt_softplus_sweep {
    unsigned long long over_bound; /* inputs farther than max_ulp from float64, or breaking an exact rule */
    uint32_t worst_input;          /* the input of the largest error (of the first rule broken, if any) */
    uint32_t worst_ulp_milli;      /* the largest error, in thousandths of an ulp */
} sqrt_softplus_sweep;

/* Every fp32 bit pattern through score_math.h's alphamoe_sqrt_softplus on
 * the device, against sqrt(log(1 + e^x)) in float64 there: errors above
 * max_ulp (in units of the float's spacing at the exact value, at least
 * the smallest subnormal) are counted, and so is any NaN not the quieted
 * input, a -0.0, an infinity for a finite input. */
cudaError_t sqrt_softplus_sweep_all_inputs(double max_ulp, sqrt_softplus_sweep *result);

/* alphamoe_sqrt_softplus of n inputs on the device, host buffers in and out. */
cudaError_t sqrt_softplus_of(const uint32_t *input_bits, uint32_t *output_bits, int32_t n);

/* The kernels' bounds on the sqrt-softplus (kernels/common/score_bounds.cuh)
 * for every fp32 bit pattern against score_math.h's exact score on the
 * device. */
typedef struct score_bounds_sweep {
    unsigned long long outside;  /* inputs whose score is outside its bounds (or NaN bounds of a number) */
    unsigned long long tight;    /* inputs of normal scores whose bounds are within 2^-10 of the score */
    uint32_t first_outside;      /* the smallest such input's bits; 0xffffffff for none */
} score_bounds_sweep;

cudaError_t score_bounds_sweep_all_inputs(score_bounds_sweep *result);

#ifdef __cplusplus
}
#endif

#endif
