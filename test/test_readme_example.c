/* Runs README's C example as written: it must compile against the public
 * header and route a batch on the GPU (skipped without one). */
#include "readme_example.h"

#include <stdlib.h>

int main(void) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    enum { M = 333, E = 512 };
    float *host = malloc(sizeof(float) * M * E);
    if (!host) return 1;
    srand(7);
    for (int i = 0; i < M * E; ++i) host[i] = (float)rand() / RAND_MAX;
    float *logits = NULL;
    if (cudaMalloc((void **)&logits, sizeof(float) * M * E) != cudaSuccess) return 1;
    cudaMemcpy(logits, host, sizeof(float) * M * E, cudaMemcpyHostToDevice);
    const int rc = route_layer(logits, M, 0);
    const cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        fprintf(stderr, "%s\n", cudaGetErrorString(err));
        return 1;
    }
    free(host);
    return rc == 0 ? 0 : 1;
}
