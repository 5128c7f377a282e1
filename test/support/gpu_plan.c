#include "gpu_plan.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



void describe(const route_case *c, char *out, size_t n) {
    snprintf(out, n, "E=%d k=%d block_m=%d M=%d max_tokens=%d flags=%u force=%d pattern=%s stride=%" PRId64
             " optional=%d offset=%d", c->E, c->k, c->block_m, c->M, c->max_tokens, c->flags, c->force,
             logit_pattern_name(c->pattern), c->stride, c->with_optional, c->logits_offset);
}


void inputs_make(case_inputs *in, const route_case *c, test_rng *rng) {
    const int32_t max_tokens = c->max_tokens > c->M ? c->max_tokens : c->M;
    in->router = make_router(c->E, c->k, c->block_m, max_tokens, c->flags, c->force);
    in->stride = c->stride ? c->stride : c->E;
    const int64_t rows = c->M > 0 ? c->M : 1;
    const size_t bytes = (size_t)(rows * in->stride + c->logits_offset) * sizeof(float);
    in->logits = malloc(bytes);
    assert_non_null(in->logits);
    fill_logits(rng, in->logits + c->logits_offset, c->M, c->E, in->stride, c->pattern,
                (int32_t)rng_below(rng, (uint32_t)c->E));
    CUDA_OK(cudaMalloc((void **)&in->device_logits, bytes));
    CUDA_OK(cudaMemcpy(in->device_logits, in->logits, bytes, cudaMemcpyHostToDevice));
    assert_int_equal(host_plan_alloc(&in->expected, in->router, c->with_optional), 0);
    host_plan_poison(&in->expected);
    ROUTE_OK(alphamoe_route_host(in->router, c->M, in->logits + c->logits_offset, &in->expected.buffers));
    char why[512];
    if (validate_plan(&in->expected, c->M, why, sizeof why)) fail_msg("host reference invalid: %s", why);
}

void inputs_update(case_inputs *in, const route_case *c) {
    const int64_t rows = c->M > 0 ? c->M : 1;
    const size_t bytes = (size_t)(rows * in->stride + c->logits_offset) * sizeof(float);
    CUDA_OK(cudaMemcpy(in->device_logits, in->logits, bytes, cudaMemcpyHostToDevice));
    host_plan_poison(&in->expected);
    ROUTE_OK(alphamoe_route_host(in->router, c->M, in->logits + c->logits_offset, &in->expected.buffers));
    char why[512];
    if (validate_plan(&in->expected, c->M, why, sizeof why)) fail_msg("host reference invalid: %s", why);
}

void inputs_score_by_sigmoid(case_inputs *in, const route_case *c) {
    alphamoe_params p = test_params(c->E, c->k, c->block_m, c->max_tokens > c->M ? c->max_tokens : c->M, c->flags);
    p.scoring = ALPHAMOE_SCORING_SIGMOID;
    p.num_groups = c->E / 32;
    p.topk_groups = p.num_groups / 2;
    p.force_specialization = c->force;
    alphamoe_router_destroy(in->router);
    ROUTE_OK(alphamoe_router_create(&p, &in->router));
    host_plan_free(&in->expected);
    assert_int_equal(host_plan_alloc(&in->expected, in->router, c->with_optional), 0);
    inputs_update(in, c);
}

void inputs_free(case_inputs *in) {
    host_plan_free(&in->expected);
    CUDA_OK(cudaFree(in->device_logits));
    free(in->logits);
    alphamoe_router_destroy(in->router);
}

char gpu_case_label[128];

void check_against(const host_plan *expected, const device_plan *d, const route_case *c,
                          const char *what) {
    char why[512], desc[256];
    if (compare_plans(expected, &d->mirror, c->M, WEIGHT_TOLERANCE, why, sizeof why)) {
        describe(c, desc, sizeof desc);
        fail_msg("%s%s%s [%s]: %s", gpu_case_label, *gpu_case_label ? ": " : "", what, desc, why);
    }
}

void route_on(const case_inputs *in, const route_case *c, device_plan *d, cudaStream_t stream) {
    ROUTE_OK(alphamoe_route(in->router, c->M, c->M > 0 ? in->device_logits + c->logits_offset : NULL,
                            &d->buffers, (struct CUstream_st *)stream));
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(stream));
}

/* Routes one case on the GPU and checks it against the host reference. */
void run_case(const route_case *c, test_rng *rng) {
    case_inputs in;
    inputs_make(&in, c, rng);
    device_plan d;
    device_plan_alloc(&d, in.router, c->with_optional);
    device_plan_poison(&d, 0);
    route_on(&in, c, &d, 0);
    device_plan_read(&d, 0);
    check_against(&in.expected, &d, c, "GPU differs from host reference");
    device_plan_free(&d);
    inputs_free(&in);
}

