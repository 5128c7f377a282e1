#include "device_plan.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workspace.h"

void device_plan_alloc(device_plan *d, const alphamoe_router *router, int with_optional) {
    memset(d, 0, sizeof *d);
    assert_int_equal(host_plan_alloc(&d->mirror, router, with_optional), 0);
    const alphamoe_sizes *z = &d->mirror.sizes;
    CUDA_OK(device_outputs_alloc(&d->dev, z, with_optional ? OUTPUT_ALL_OPTIONAL : 0, DEVICE_PLAN_GUARD_BYTES));
    CUDA_OK(cudaMalloc(&d->workspace, (size_t)z->workspace.bytes));
    CUDA_OK(cudaMemset(d->workspace, 0, (size_t)z->workspace.bytes)); /* once, as documented */
    const alphamoe_buffers *m = &d->mirror.buffers;
    d->buffers = buffers_for(&d->dev, z, d->workspace, (size_t)z->workspace.bytes, m->correction_bias, m->expert_map);
}

output_set device_plan_mirror(device_plan *d) {
    const host_plan *m = &d->mirror;
    const output_set s = {m->topk_ids,      m->topk_weights,   m->sorted_token_ids, m->expert_ids,
                          m->num_tokens_post_padded, m->expert_counts, m->expert_offsets, m->pair_to_sorted};
    return s;
}

void device_plan_poison(device_plan *d, cudaStream_t stream) {
    host_plan_poison(&d->mirror);
    /* The mirror is reused for readback: the copy waits for the upload. */
    const output_set mirror = device_plan_mirror(d);
    CUDA_OK(outputs_copy(&d->dev, &mirror, &d->mirror.sizes, DEVICE_PLAN_GUARD_BYTES, cudaMemcpyHostToDevice, stream));
}

void device_plan_read(device_plan *d, cudaStream_t stream) {
    output_set mirror = device_plan_mirror(d);
    CUDA_OK(outputs_copy(&mirror, &d->dev, &d->mirror.sizes, DEVICE_PLAN_GUARD_BYTES, cudaMemcpyDeviceToHost, stream));
}

void device_plan_free(device_plan *d) {
    CUDA_OK(device_outputs_free(&d->dev));
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

void device_plan_expect_workspace_ready(const device_plan *d, const char *what) {
    enum { words = kWsExchangeSetsWord + 2 * kWsExchangeSetWords };
    uint32_t *ws = malloc(words * sizeof *ws);
    assert_non_null(ws);
    CUDA_OK(cudaMemcpy(ws, d->workspace, words * sizeof *ws, cudaMemcpyDeviceToHost));
    const int barriers[2] = {kWsBarrierWord, kWsLargePhaseWord};
    for (int b = 0; b < 2; ++b)
        if (ws[barriers[b]] & 0x7fffffffu)
            fail_msg("%s: workspace word %d is 0x%08x, want 0 or 0x80000000", what, barriers[b], ws[barriers[b]]);
    /* The exchange set the next large call uses: arrivals, group sums and
     * member counts all zero. */
    const int next_set = (int)(ws[kWsLargePhaseWord] >> 31);
    const uint32_t *set = ws + kWsExchangeSetsWord + next_set * kWsExchangeSetWords;
    for (int w = 0; w < kWsExchangeSetWords; ++w)
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
