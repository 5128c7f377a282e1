#include "bench_device.h"

#include <string.h>

#include "bench_check.h"
#include "code_evict.h"

int device_probe(int32_t ordinal, char *why, size_t why_size) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, why_size, "no usable CUDA device (cudaGetDeviceCount: %s: %s)", cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return EXIT_SKIPPED;
    }
    if (count == 0) {
        snprintf(why, why_size, "no CUDA device");
        return EXIT_SKIPPED;
    }
    if (ordinal >= count) {
        fprintf(stderr, BENCH_PROG ": --device %d: only %d CUDA device(s) visible\n", (int)ordinal, count);
        return -1;
    }
    char name[256];
    int32_t cc = 0, image = 0;
    const alphamoe_status st = alphamoe_device_describe(ordinal, name, sizeof(name), &cc, &image);
    if (st != ALPHAMOE_OK) {
        snprintf(why, why_size, "the router cannot use device %d: %s", (int)ordinal, alphamoe_status_string(st));
        return EXIT_SKIPPED;
    }
    if (image == 0) {
        snprintf(why, why_size, "device %d (%s, compute capability %d.%d): %s", (int)ordinal, name, (int)(cc / 10),
                 (int)(cc % 10), alphamoe_status_string(ALPHAMOE_ERROR_NO_IMAGE));
        return EXIT_SKIPPED;
    }
    return 0;
}

int device_open(bench_device *d, int32_t ordinal) {
    memset(d, 0, sizeof(*d));
    d->ordinal = ordinal;
    /* The runtime makes the primary context current first; the library's
     * queries then find it alive instead of creating and dropping one. */
    CUDA_TRY(cudaSetDevice(ordinal));
    CUDA_TRY(cudaFree(NULL));
    /* First, so that no code the library loads comes before it. */
    TRY(arena_open(&d->arena, DEVICE_ARENA_BYTES));
    ROUTER_TRY(alphamoe_device_describe(ordinal, d->name, sizeof(d->name), &d->compute_capability, &d->image_arch));
    d->attributes.struct_size = sizeof(d->attributes);
    ROUTER_TRY(alphamoe_device_attributes_query(ordinal, &d->attributes));
    int sms = 0, l2 = 0, driver = 0, runtime = 0;
    CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
    CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ordinal));
    CUDA_TRY(cudaDriverGetVersion(&driver));
    CUDA_TRY(cudaRuntimeGetVersion(&runtime));
    d->sm_count = sms;
    d->l2_bytes = l2;
    d->driver_version = driver;
    d->runtime_version = runtime;
    /* A blocking stream: set-up done with cudaMemset/cudaMemcpy on the
     * legacy default stream is ordered before every sample. */
    CUDA_TRY(cudaStreamCreate(&d->stream));
    CUDA_TRY(cudaEventCreate(&d->start));
    CUDA_TRY(cudaEventCreate(&d->stop));
    /* Twice the L2, and never less than 64 MiB should the attribute read
     * low: a memset of it leaves nothing of a sample's inputs cached. */
    size_t bytes = 2 * (size_t)(l2 > 0 ? l2 : 0);
    if (bytes < ((size_t)64 << 20)) bytes = (size_t)64 << 20;
    d->l2_evict_bytes = bytes;
    CUDA_TRY(cudaMalloc(&d->l2_evict, bytes));
    CUDA_TRY(cudaMalloc((void **)&d->code_evict_sink, sizeof(uint32_t)));
    return 0;
}

void device_close(bench_device *d) {
    /* Teardown failures cannot change any figure any more: ignored. */
    arena_close(&d->arena);
    if (d->l2_evict) cudaFree(d->l2_evict);
    if (d->code_evict_sink) cudaFree(d->code_evict_sink);
    if (d->start) cudaEventDestroy(d->start);
    if (d->stop) cudaEventDestroy(d->stop);
    if (d->stream) cudaStreamDestroy(d->stream);
    memset(d, 0, sizeof(*d));
}

int device_evict_caches(bench_device *d) {
    d->evictions += 1;
    CUDA_TRY(cudaMemsetAsync(d->l2_evict, (int)(d->evictions & 0xff), d->l2_evict_bytes, d->stream));
    /* After the memset, whose own code is small: the last code through the
     * SMs' caches before the sample is the evicting kernel's. */
    if (d->evict_code) CUDA_TRY(launch_code_evict(d->stream, 2 * d->sm_count, d->code_evict_sink));
    return 0;
}
