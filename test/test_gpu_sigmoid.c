/* The kernels' sigmoid equals score_math.h's, which the host reference
 * uses, for every one of the 2^32 fp32 inputs: NaNs, infinities, zeros,
 * subnormals and the range where e^-|x| is subnormal included. Skipped (77)
 * without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "device_plan.h"
#include "gpu_test.h"
#include "sigmoid_check.h"

static void gpu_sigmoid_every_input(void **state) {
    (void)state;
    int sms = 0;
    CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    sigmoid_check_result *device_result = NULL;
    CUDA_OK(cudaMalloc((void **)&device_result, sizeof *device_result));
    CUDA_OK(cudaMemset(device_result, 0, sizeof *device_result));
    CUDA_OK(sigmoid_check_launch(8 * sms, device_result));
    sigmoid_check_result r;
    CUDA_OK(cudaMemcpy(&r, device_result, sizeof r, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(device_result));
    assert_true(r.checked == (1ull << 32));
    if (r.mismatches != 0)
        fail_msg("%llu results differ; the first: input 0x%08x gave 0x%08x, score_math.h 0x%08x", r.mismatches,
                 (unsigned)r.input, (unsigned)r.got, (unsigned)r.want);
    print_message("# %llu inputs, all equal to score_math.h's sigmoid\n", r.checked);
}

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_sigmoid_every_input),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("gpu_sigmoid", tests, NULL, NULL);
}
