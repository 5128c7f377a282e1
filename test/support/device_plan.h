/* Route outputs in device memory for the GPU tests, on the tools' output
 * sets (tools/common/outputs.h): allocation with guard zones, poisoning
 * from a host mirror, and reading back into that mirror for the host-side
 * comparisons of test_support.h. */
#ifndef ALPHAMOE_TEST_DEVICE_PLAN_H
#define ALPHAMOE_TEST_DEVICE_PLAN_H

#include <cuda_runtime_api.h>

#include "outputs.h"
#include "test_support.h"

/* Fails the current cmocka test on a CUDA runtime error. */
#define CUDA_OK(call)                                                                   \
    do {                                                                                \
        const cudaError_t err_ = (call);                                                \
        if (err_ != cudaSuccess) fail_msg("%s: %s", #call, cudaGetErrorString(err_));   \
    } while (0)

/* Every array is followed by a guard of TEST_GUARD elements. */
#define DEVICE_PLAN_GUARD_BYTES ((size_t)TEST_GUARD * 4u)

typedef struct device_plan {
    host_plan mirror; /* poison source before a call, readback target after */
    output_set dev;   /* the arrays, each followed by its guard */
    void *workspace;
    alphamoe_buffers buffers; /* device pointers, workspace zeroed once */
} device_plan;

void device_plan_alloc(device_plan *d, const alphamoe_router *router, int with_optional);
/* Poisons every array and its guard on the device (and the mirror). */
void device_plan_poison(device_plan *d, cudaStream_t stream);
/* Copies every array and its guard back into the mirror. */
void device_plan_read(device_plan *d, cudaStream_t stream);
/* The mirror's arrays as an output set, for copies to and from d->dev. */
output_set device_plan_mirror(device_plan *d);
void device_plan_free(device_plan *d);
/* After device_plan_read: fails unless every array, guard included, still
 * holds the poison byte for byte. */
void device_plan_expect_poisoned(const device_plan *d, const char *what);
/* Fills the workspace with `byte` / fails unless it still holds `byte`
 * everywhere. Re-zero it (device_plan_zero_workspace) before routing. */
void device_plan_fill_workspace(device_plan *d, unsigned char byte);
void device_plan_expect_workspace(const device_plan *d, unsigned char byte, const char *what);
void device_plan_zero_workspace(device_plan *d);
/* Fails unless the workspace is ready for the next call, as every call must
 * leave it (kernels/route_args.h): the small kernel's grid barrier word and
 * the large kernel's phase word hold at most bit 31, and the exchange set
 * the next large call uses, named by the phase word's bit 31, is zero. */
void device_plan_expect_workspace_ready(const device_plan *d, const char *what);

/* Fails unless two read-back plans of M tokens (both with the optional
 * outputs) are bitwise identical up to their live lengths, weights
 * included: specializations must agree exactly (contract section 6). */
void expect_plans_bitwise_equal(const host_plan *a, const host_plan *b, int32_t M);

/* A device copy of `bytes` host bytes (NULL for 0 bytes). */
void *device_copy(const void *host, size_t bytes);

#endif
