/* GPU test helpers (plans in device memory: device_plan.h): one routing
 * case (shape, flags, logit pattern, stride, alignment) and its inputs, the
 * check of a device plan against the host reference, and the skip rule.
 * Failures go through cmocka (fail_msg). */
#ifndef ALPHAMOE_TEST_GPU_PLAN_H
#define ALPHAMOE_TEST_GPU_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "device_plan.h"
#include "gpu_test.h"
#include "test_support.h"

#define WEIGHT_TOLERANCE 4e-6f

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
/* The case's router with sigmoid scoring over its experts in groups of 32
 * (E a multiple of 32), half of the groups kept, in place of its softmax,
 * and the host reference of that: from 2 to 16 tokens the library
 * launches a cluster of a CTA a token (beyond 8 CTAs, a size past the
 * portable one). */
void inputs_score_by_sigmoid(case_inputs *in, const route_case *c);
void inputs_free(case_inputs *in);

/* Named in every failure of check_against (a soak's case number, say). */
extern char gpu_case_label[128];

/* Fails unless d's read-back plan equals `expected` (compare_plans). */
void check_against(const host_plan *expected, const device_plan *d, const route_case *c, const char *what);
/* alphamoe_route of the case on `stream`, then waits for it. */
void route_on(const case_inputs *in, const route_case *c, device_plan *d, cudaStream_t stream);
/* Routes one case on the GPU and checks it against the host reference. */
void run_case(const route_case *c, test_rng *rng);
#endif
