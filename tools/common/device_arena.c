#include "device_arena.h"

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "tool.h"

int arena_open(device_arena *a, size_t bytes) {
    memset(a, 0, sizeof(*a));
    CUDA_TRY(cudaMalloc((void **)&a->base, bytes));
    a->bytes = bytes;
    return 0;
}

void arena_close(device_arena *a) {
    if (a->base) cudaFree(a->base);
    memset(a, 0, sizeof(*a));
}

void *arena_take(device_arena *a, size_t bytes, const char *what) {
    const size_t start = (a->used + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (a->base == NULL || start > a->bytes || bytes > a->bytes - start) {
        fprintf(stderr, "%s: %s (%zu bytes) does not fit the device arena (%zu of %zu bytes taken)\n", tool_prog,
                what, bytes, a->used, a->bytes);
        return NULL;
    }
    a->used = start + bytes;
    return a->base + start;
}

void arena_release_all(device_arena *a) { a->used = a->origin; }

bool arena_in_use(const device_arena *a) { return a->used != a->origin; }

void arena_set_origin(device_arena *a, size_t origin) { a->origin = a->used = origin; }
