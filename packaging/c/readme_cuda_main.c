/* README's C example, built with nothing but the flags of the
 * alphamoe-router-cuda pkg-config module, routing a batch on the GPU: the
 * module is all a CUDA program needs. Exits 77 without a GPU. (The example's
 * outputs are checked element by element in the build tree's
 * readme_c_example.) */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "readme_example.h"

int main(void) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    enum { kTokens = 333, kExperts = 512 };
    static float host[kTokens * kExperts];
    for (int i = 0; i < kTokens * kExperts; ++i) host[i] = (float)(i * 7919 % 1000) / 100.0f - 5.0f;
    float *logits = NULL;
    if (cudaMalloc((void **)&logits, sizeof host) != cudaSuccess ||
        cudaMemcpy(logits, host, sizeof host, cudaMemcpyHostToDevice) != cudaSuccess) {
        printf("FAIL: cannot put the logits on the device\n");
        return 1;
    }
    const int rc = route_layer(logits, kTokens, 0);
    const cudaError_t done = cudaDeviceSynchronize();
    if (rc != 0 || done != cudaSuccess) {
        printf("FAIL: route_layer gave %d, the device %s\n", rc, cudaGetErrorString(done));
        return 1;
    }
    printf("README's CUDA example routed %d tokens through alphamoe-router-cuda's flags\n", kTokens);
    return 0;
}
