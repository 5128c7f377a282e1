#include "gpu_test.h"

#include <stdio.h>

#include <cuda_runtime_api.h>

test_rng case_rng(uint64_t salt) {
    test_rng rng;
    rng_seed(&rng, test_base_seed() ^ (salt * 0x9E3779B97F4A7C15ull));
    return rng;
}

int gpu_skip_without_device(void) {
    int devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) {
        printf("SKIP: no CUDA device (%s): GPU tests need one\n",
               err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return SKIP_RETURN_CODE;
    }
    return 0;
}
