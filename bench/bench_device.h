/*
 * The device alphamoe-bench measures on: whether there is one the library
 * can use, its properties, the stream every sample runs on, the buffer
 * whose memset evicts L2 before each sample and the arena that holds the
 * timed call's buffers.
 */
#ifndef ALPHAMOE_BENCH_DEVICE_H
#define ALPHAMOE_BENCH_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "alphamoe/router_diagnostics.h"
#include "device_arena.h"

/* Enough for the largest shape the benchmark measures (E512, 16384
 * tokens: 32 MiB of fp32 logits) with its outputs and workspace, at any
 * --arena-offset-kib up to 64 MiB. */
#define DEVICE_ARENA_BYTES ((size_t)192 << 20)

typedef struct bench_device {
    int32_t ordinal;
    char name[256];
    int32_t compute_capability;
    int32_t image_arch;
    int32_t sm_count;
    int64_t l2_bytes;
    int32_t driver_version;  /* cudaDriverGetVersion, e.g. 13000 */
    int32_t runtime_version; /* cudaRuntimeGetVersion */
    alphamoe_device_attributes attributes;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    void *l2_evict;          /* at least twice the L2 */
    size_t l2_evict_bytes;
    uint32_t evictions;      /* memsets issued, varies the byte written */
    bool evict_code;         /* --cold-code: the instruction caches too */
    uint32_t *code_evict_sink;
    device_arena arena;      /* the buffers of the call being timed */
} bench_device;

/* 0: usable (no context created yet); EXIT_SKIPPED with the reason in why:
 * no device, no driver or no kernel image for it; -1: a hard error. */
int device_probe(int32_t ordinal, char *why, size_t why_size);

int device_open(bench_device *d, int32_t ordinal);
void device_close(bench_device *d);

/* Issues a memset of the eviction buffer on d->stream: whatever a sample
 * reads afterwards comes from device memory, not from L2. With evict_code
 * set, then the code-evicting kernel on every SM: the sample's kernels
 * fetch their instructions from device memory too. */
int device_evict_caches(bench_device *d);

#endif
