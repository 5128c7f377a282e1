/* The device side of test_gpu_sigmoid.c (sigmoid_kernels.cu): the
 * kernels' row sigmoid (kernels/common/sigmoid_slots.cuh) over inputs given
 * as bit patterns, and over every one of the 2^32 fp32 bit patterns against
 * score_math.h's alphamoe_sigmoid on the device. */
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

#ifdef __cplusplus
}
#endif

#endif
