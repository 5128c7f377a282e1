#include "device_plan.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The workspace layout of kernels/route_args.h that the check needs. */
enum {
    WS_BARRIER_WORD = 0,
    WS_LARGE_PHASE_WORD = 32,
    WS_EXCHANGE_SETS_WORD = 64,
    WS_EXCHANGE_SET_WORDS = 32 + 16 * 512 + 256 * 512,
};

void device_plan_expect_workspace_ready(const device_plan *d, const char *what) {
    enum { words = WS_EXCHANGE_SETS_WORD + 2 * WS_EXCHANGE_SET_WORDS };
    uint32_t *ws = malloc(words * sizeof *ws);
    assert_non_null(ws);
    CUDA_OK(cudaMemcpy(ws, d->workspace, words * sizeof *ws, cudaMemcpyDeviceToHost));
    const int barriers[2] = {WS_BARRIER_WORD, WS_LARGE_PHASE_WORD};
    for (int b = 0; b < 2; ++b)
        if (ws[barriers[b]] & 0x7fffffffu)
            fail_msg("%s: workspace word %d is 0x%08x, want 0 or 0x80000000", what, barriers[b], ws[barriers[b]]);
    /* The exchange set the next large call uses: arrivals, group sums and
     * member counts all zero. */
    const int next_set = (int)(ws[WS_LARGE_PHASE_WORD] >> 31);
    const uint32_t *set = ws + WS_EXCHANGE_SETS_WORD + next_set * WS_EXCHANGE_SET_WORDS;
    for (int w = 0; w < WS_EXCHANGE_SET_WORDS; ++w)
        if (set[w] != 0) fail_msg("%s: word %d of exchange set %d is %u, want 0", what, w, next_set, set[w]);
    free(ws);
}

void expect_plans_bitwise_equal(const host_plan *a, const host_plan *b, int32_t M) {
    const int32_t live = M > 0 ? *a->num_tokens_post_padded : 0;
    const size_t pairs = (size_t)M * (size_t)a->params.top_k * 4;
    const size_t plan_experts = (size_t)a->params.local_expert_count;
    assert_memory_equal(a->topk_ids, b->topk_ids, pairs);
    assert_memory_equal(a->topk_weights, b->topk_weights, pairs);
    assert_memory_equal(a->pair_to_sorted, b->pair_to_sorted, pairs);
    assert_memory_equal(a->sorted_token_ids, b->sorted_token_ids, (size_t)live * 4);
    assert_memory_equal(a->expert_ids, b->expert_ids, (size_t)(live / a->params.block_m) * 4);
    assert_memory_equal(a->expert_counts, b->expert_counts, plan_experts * 4);
    assert_memory_equal(a->expert_offsets, b->expert_offsets, (plan_experts + 1) * 4);
}

void *device_copy(const void *host, size_t bytes) {
    if (bytes == 0) return NULL;
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, bytes));
    CUDA_OK(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice));
    return p;
}
