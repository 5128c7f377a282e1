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

/* ------------------------------------------------------------ device plan */


static void *device_alloc(int64_t elements) {
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, (size_t)(elements + TEST_GUARD) * 4u));
    return p;
}

void device_plan_alloc(device_plan *d, const alphamoe_router *router, int with_optional) {
    memset(d, 0, sizeof *d);
    assert_int_equal(host_plan_alloc(&d->mirror, router, with_optional), 0);
    const alphamoe_sizes *z = &d->mirror.sizes;
    d->topk_ids = device_alloc(z->topk_ids.elements);
    d->topk_weights = device_alloc(z->topk_weights.elements);
    d->sorted_token_ids = device_alloc(z->sorted_token_ids.elements);
    d->expert_ids = device_alloc(z->expert_ids.elements);
    d->num_tokens_post_padded = device_alloc(1);
    if (with_optional) {
        d->expert_counts = device_alloc(z->expert_counts.elements);
        d->expert_offsets = device_alloc(z->expert_offsets.elements);
        d->pair_to_sorted = device_alloc(z->pair_to_sorted.elements);
    }
    CUDA_OK(cudaMalloc(&d->workspace, (size_t)z->workspace.bytes));
    CUDA_OK(cudaMemset(d->workspace, 0, (size_t)z->workspace.bytes)); /* once, as documented */
    alphamoe_buffers *b = &d->buffers;
    *b = d->mirror.buffers;
    b->topk_ids = d->topk_ids;
    b->topk_weights = d->topk_weights;
    b->sorted_token_ids = d->sorted_token_ids;
    b->expert_ids = d->expert_ids;
    b->num_tokens_post_padded = d->num_tokens_post_padded;
    b->expert_counts = d->expert_counts;
    b->expert_offsets = d->expert_offsets;
    b->pair_to_sorted = d->pair_to_sorted;
    b->workspace = d->workspace;
    b->workspace_bytes = (size_t)z->workspace.bytes;
}

#define FOR_EACH_ARRAY(d, X)                                                                     \
    X((d)->topk_ids, (d)->mirror.topk_ids, (d)->mirror.sizes.topk_ids.elements)                 \
    X((d)->topk_weights, (d)->mirror.topk_weights, (d)->mirror.sizes.topk_weights.elements)     \
    X((d)->sorted_token_ids, (d)->mirror.sorted_token_ids, (d)->mirror.sizes.sorted_token_ids.elements) \
    X((d)->expert_ids, (d)->mirror.expert_ids, (d)->mirror.sizes.expert_ids.elements)           \
    X((d)->num_tokens_post_padded, (d)->mirror.num_tokens_post_padded, 1)                       \
    X((d)->expert_counts, (d)->mirror.expert_counts, (d)->mirror.sizes.expert_counts.elements)  \
    X((d)->expert_offsets, (d)->mirror.expert_offsets, (d)->mirror.sizes.expert_offsets.elements) \
    X((d)->pair_to_sorted, (d)->mirror.pair_to_sorted, (d)->mirror.sizes.pair_to_sorted.elements)

void device_plan_poison(device_plan *d, cudaStream_t stream) {
    host_plan_poison(&d->mirror);
#define UPLOAD(dev, host, n) \
    if (dev) CUDA_OK(cudaMemcpyAsync(dev, host, (size_t)((n) + TEST_GUARD) * 4u, cudaMemcpyHostToDevice, stream));
    FOR_EACH_ARRAY(d, UPLOAD)
#undef UPLOAD
    CUDA_OK(cudaStreamSynchronize(stream)); /* the mirror is reused for readback */
}

void device_plan_read(device_plan *d, cudaStream_t stream) {
#define DOWNLOAD(dev, host, n) \
    if (dev) CUDA_OK(cudaMemcpyAsync(host, dev, (size_t)((n) + TEST_GUARD) * 4u, cudaMemcpyDeviceToHost, stream));
    FOR_EACH_ARRAY(d, DOWNLOAD)
#undef DOWNLOAD
    CUDA_OK(cudaStreamSynchronize(stream));
}

void device_plan_free(device_plan *d) {
#define RELEASE(dev, host, n) \
    if (dev) CUDA_OK(cudaFree(dev));
    FOR_EACH_ARRAY(d, RELEASE)
#undef RELEASE
    CUDA_OK(cudaFree(d->workspace));
    host_plan_free(&d->mirror);
}

/* ------------------------------------------------------------- one case */


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

test_rng case_rng(uint64_t salt) {
    test_rng rng;
    rng_seed(&rng, test_base_seed() ^ (salt * 0x9E3779B97F4A7C15ull));
    return rng;
}

static void expect_poison_i32(const char *what, const char *name, const int32_t *a, int64_t n) {
    if (!a) return;
    for (int64_t i = 0; i < n + TEST_GUARD; ++i)
        if (a[i] != TEST_POISON_I32)
            fail_msg("%s: %s[%" PRId64 "] was written (0x%08x)", what, name, i, (unsigned)a[i]);
}

void device_plan_expect_poisoned(const device_plan *d, const char *what) {
    const host_plan *m = &d->mirror;
    const alphamoe_sizes *z = &m->sizes;
    expect_poison_i32(what, "topk_ids", m->topk_ids, z->topk_ids.elements);
    for (int64_t i = 0; i < z->topk_weights.elements + TEST_GUARD; ++i) {
        uint32_t bits;
        memcpy(&bits, &m->topk_weights[i], 4);
        if (bits != TEST_POISON_F32_BITS) fail_msg("%s: topk_weights[%" PRId64 "] was written", what, i);
    }
    expect_poison_i32(what, "sorted_token_ids", m->sorted_token_ids, z->sorted_token_ids.elements);
    expect_poison_i32(what, "expert_ids", m->expert_ids, z->expert_ids.elements);
    expect_poison_i32(what, "num_tokens_post_padded", m->num_tokens_post_padded, 1);
    expect_poison_i32(what, "expert_counts", m->expert_counts, z->expert_counts.elements);
    expect_poison_i32(what, "expert_offsets", m->expert_offsets, z->expert_offsets.elements);
    expect_poison_i32(what, "pair_to_sorted", m->pair_to_sorted, z->pair_to_sorted.elements);
}

void device_plan_fill_workspace(device_plan *d, unsigned char byte) {
    CUDA_OK(cudaMemset(d->workspace, byte, (size_t)d->mirror.sizes.workspace.bytes));
    CUDA_OK(cudaDeviceSynchronize());
}

void device_plan_expect_workspace(const device_plan *d, unsigned char byte, const char *what) {
    const size_t n = (size_t)d->mirror.sizes.workspace.bytes;
    unsigned char *copy = malloc(n);
    assert_non_null(copy);
    CUDA_OK(cudaMemcpy(copy, d->workspace, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i)
        if (copy[i] != byte) {
            const unsigned got = copy[i];
            free(copy);
            fail_msg("%s: workspace byte %zu is 0x%02x, expected 0x%02x", what, i, got, byte);
        }
    free(copy);
}

void device_plan_zero_workspace(device_plan *d) { device_plan_fill_workspace(d, 0); }

int gpu_skip_without_device(void) {
    int devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) {
        printf("SKIP: no CUDA device (%s): GPU tests need one\n",
               err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return SKIP_RETURN_CODE;
    }
    return 0;
}
