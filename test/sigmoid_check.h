/* The exhaustive check of the kernels' sigmoid (sigmoid_check.cu), callable
 * from C. */
#ifndef ALPHAMOE_TEST_SIGMOID_CHECK_H
#define ALPHAMOE_TEST_SIGMOID_CHECK_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device memory, zeroed before the launch. */
typedef struct sigmoid_check_result {
    unsigned long long checked;    /* inputs evaluated: 2^32 when complete */
    unsigned long long mismatches; /* results that differ from alphamoe_sigmoid's */
    uint32_t input, got, want;     /* the first mismatch found, as bits */
} sigmoid_check_result;

/* Every 32-bit pattern as an input, over `ctas` CTAs on the current device. */
cudaError_t sigmoid_check_launch(int32_t ctas, sigmoid_check_result *result);

#ifdef __cplusplus
}
#endif

#endif
