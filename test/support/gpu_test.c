#include "gpu_test.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

test_rng case_rng(uint64_t salt) {
    test_rng rng;
    rng_seed(&rng, test_base_seed() ^ (salt * 0x9E3779B97F4A7C15ull));
    return rng;
}

int gpu_skip_without_device(void) {
    int devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&devices);
    if (err == cudaSuccess && devices > 0) return 0;
    if (err == cudaErrorNoDevice || (err == cudaSuccess && devices == 0)) {
        printf("SKIP: no CUDA device (%s): GPU tests need one\n",
               err == cudaSuccess ? "0 devices" : cudaGetErrorString(err));
        return SKIP_RETURN_CODE;
    }
    /* The runtime says this too of a driver that is there but too old, or
     * broken: only where there is none at all is it a machine without a GPU. */
    if (err == cudaErrorInsufficientDriver) {
        void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (driver == NULL) {
            printf("SKIP: no CUDA driver (libcuda.so.1: %s): GPU tests need one\n", dlerror());
            return SKIP_RETURN_CODE;
        }
        dlclose(driver);
    }
    fprintf(stderr, "FAIL: cudaGetDeviceCount: %s (%s): the CUDA setup of this machine is broken\n",
            cudaGetErrorName(err), cudaGetErrorString(err));
    exit(1);
}
