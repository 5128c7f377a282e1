/* GPU test helpers: plans in device memory with guard zones, one routing
 * case (shape, flags, logit pattern, stride, alignment) and its inputs, the
 * check of a device plan against the host reference, and the skip rule.
 * Failures go through cmocka (fail_msg). */
#ifndef ALPHAMOE_TEST_GPU_PLAN_H
#define ALPHAMOE_TEST_GPU_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "test_support.h"

#define WEIGHT_TOLERANCE 4e-6f
#define SKIP_RETURN_CODE 77
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

#define CUDA_OK(call)                                                                   \
    do {                                                                                \
        const cudaError_t err_ = (call);                                                \
        if (err_ != cudaSuccess) fail_msg("%s: %s", #call, cudaGetErrorString(err_));   \
    } while (0)

#define ROUTE_OK(call)                                                                  \
    do {                                                                                \
        const alphamoe_status st_ = (call);                                             \
        if (st_ != ALPHAMOE_OK) fail_msg("%s: %s", #call, alphamoe_status_string(st_)); \
    } while (0)

/* Every array of a plan in device memory, TEST_GUARD elements longer than
 * sized, plus a zeroed workspace; `buffers` points at them. */
typedef struct device_plan {
    host_plan mirror; /* poison source before a call, readback target after */
    int32_t *topk_ids;
    float *topk_weights;
    int32_t *sorted_token_ids;
    int32_t *expert_ids;
    int32_t *num_tokens_post_padded;
    int32_t *expert_counts;
    int32_t *expert_offsets;
    int32_t *pair_to_sorted;
    void *workspace;
    alphamoe_buffers buffers;
} device_plan;

/* Allocates on the current device; the workspace is zeroed once. */
void device_plan_alloc(device_plan *d, const alphamoe_router *router, int with_optional);
/* Poisons every array and guard (on `stream`, waited for). */
void device_plan_poison(device_plan *d, cudaStream_t stream);
/* Copies every array and guard into d->mirror (waits for `stream`). */
void device_plan_read(device_plan *d, cudaStream_t stream);
void device_plan_free(device_plan *d);
/* After device_plan_read: fails unless every array, guard included, still
 * holds the poison byte for byte. */
void device_plan_expect_poisoned(const device_plan *d, const char *what);
/* Fills the workspace with `byte` / fails unless it still holds `byte`
 * everywhere. Re-zero it (device_plan_zero_workspace) before routing. */
void device_plan_fill_workspace(device_plan *d, unsigned char byte);
void device_plan_expect_workspace(const device_plan *d, unsigned char byte, const char *what);
void device_plan_zero_workspace(device_plan *d);

/* One routing case. */
typedef struct route_case {
    int32_t E, k, block_m, M, max_tokens;
    uint32_t flags;
    int32_t force;
    logit_pattern pattern;
    int64_t stride;      /* 0: E */
    int with_optional;
    int logits_offset;   /* floats: 1 makes logits 4- but not 16-byte aligned */
} route_case;

void describe(const route_case *c, char *out, size_t n);

/* A router for the case, its logits on host and device, and the host
 * reference's plan of them (checked by validate_plan). */
typedef struct case_inputs {
    alphamoe_router *router;
    int64_t stride;
    float *logits;        /* host */
    float *device_logits; /* allocation; logits at + logits_offset */
    host_plan expected;
} case_inputs;

void inputs_make(case_inputs *in, const route_case *c, test_rng *rng);
/* After the caller rewrote in->logits (rows of in->stride): uploads them
 * and recomputes the host reference. */
void inputs_update(case_inputs *in, const route_case *c);
void inputs_free(case_inputs *in);

/* Named in every failure of check_against (a soak's case number, say). */
extern char gpu_case_label[128];

/* Fails unless d's read-back plan equals `expected` (compare_plans). */
void check_against(const host_plan *expected, const device_plan *d, const route_case *c, const char *what);
/* alphamoe_route of the case on `stream`, then waits for it. */
void route_on(const case_inputs *in, const route_case *c, device_plan *d, cudaStream_t stream);
/* Routes one case on the GPU and checks it against the host reference. */
void run_case(const route_case *c, test_rng *rng);
/* A generator of the run's seed and a salt of the test's own. */
test_rng case_rng(uint64_t salt);

/* 77 (skip) with a line saying why when no CUDA device is visible, else 0. */
int gpu_skip_without_device(void);

#endif
