/*
 * What every program built on the shared tool code agrees on: its name in
 * messages, the exit statuses, and the error checks that report a failed
 * CUDA or router call with the call's text and make the caller return -1.
 */
#ifndef ALPHAMOE_TOOLS_TOOL_H
#define ALPHAMOE_TOOLS_TOOL_H

#include <stdio.h>

#include <cuda_runtime_api.h>

#include "alphamoe/router_diagnostics.h"

/* The program's name, prefixed to every message of the shared code; each
 * program sets it first thing in main. */
extern const char *tool_prog;

#define EXIT_USAGE 2
/* What a skipped meson test exits with: no GPU, nothing to do. */
#define EXIT_SKIPPED 77
/* The parsers' answer to --help. */
#define PARSE_HELP (-1)

#if defined(__GNUC__)
#define TOOL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TOOL_PRINTF(f, a)
#endif

#define CUDA_TRY(call)                                                                                 \
    do {                                                                                               \
        const cudaError_t error_ = (call);                                                             \
        if (error_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s failed: %s: %s (%s:%d)\n", tool_prog, #call, cudaGetErrorName(error_), \
                    cudaGetErrorString(error_), __FILE__, __LINE__);                                   \
            return -1;                                                                                 \
        }                                                                                              \
    } while (0)

#define ROUTER_TRY(call)                                                                              \
    do {                                                                                              \
        const alphamoe_status status_ = (call);                                                       \
        if (status_ != ALPHAMOE_OK) {                                                                 \
            fprintf(stderr, "%s: %s failed: %s (%s:%d)\n", tool_prog, #call, alphamoe_status_string(status_), \
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
