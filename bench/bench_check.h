/*
 * Error handling shared by the files of alphamoe-bench: every failed CUDA
 * or router call is reported with the call's text and makes the caller
 * return -1; the benchmark stops at the first one.
 */
#ifndef ALPHAMOE_BENCH_CHECK_H
#define ALPHAMOE_BENCH_CHECK_H

#include <stdio.h>

#include <cuda_runtime_api.h>

#include "alphamoe/router_diagnostics.h"

#define BENCH_PROG "alphamoe-bench"

/* What a skipped meson test exits with: no GPU, nothing measured. */
#define EXIT_SKIPPED 77

#define CUDA_TRY(call)                                                                                 \
    do {                                                                                               \
        const cudaError_t error_ = (call);                                                             \
        if (error_ != cudaSuccess) {                                                                   \
            fprintf(stderr, BENCH_PROG ": %s failed: %s: %s (%s:%d)\n", #call, cudaGetErrorName(error_), \
                    cudaGetErrorString(error_), __FILE__, __LINE__);                                   \
            return -1;                                                                                 \
        }                                                                                              \
    } while (0)

#define ROUTER_TRY(call)                                                                              \
    do {                                                                                              \
        const alphamoe_status status_ = (call);                                                       \
        if (status_ != ALPHAMOE_OK) {                                                                 \
            fprintf(stderr, BENCH_PROG ": %s failed: %s (%s:%d)\n", #call, alphamoe_status_string(status_), \
                    __FILE__, __LINE__);                                                              \
            return -1;                                                                                \
        }                                                                                             \
    } while (0)

/* For -1/0 returning helpers. */
#define TRY(call)                     \
    do {                              \
        if ((call) != 0) return -1;   \
    } while (0)

#endif
