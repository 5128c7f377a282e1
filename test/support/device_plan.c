#include "device_plan.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

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

#define FOR_EACH_ARRAY(d, X)                                                                          \
    X((d)->topk_ids, (d)->mirror.topk_ids, (d)->mirror.sizes.topk_ids.elements)                      \
    X((d)->topk_weights, (d)->mirror.topk_weights, (d)->mirror.sizes.topk_weights.elements)          \
    X((d)->sorted_token_ids, (d)->mirror.sorted_token_ids, (d)->mirror.sizes.sorted_token_ids.elements) \
    X((d)->expert_ids, (d)->mirror.expert_ids, (d)->mirror.sizes.expert_ids.elements)                \
    X((d)->num_tokens_post_padded, (d)->mirror.num_tokens_post_padded, 1)                            \
    X((d)->expert_counts, (d)->mirror.expert_counts, (d)->mirror.sizes.expert_counts.elements)       \
    X((d)->expert_offsets, (d)->mirror.expert_offsets, (d)->mirror.sizes.expert_offsets.elements)    \
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

void *device_copy(const void *host, size_t bytes) {
    if (bytes == 0) return NULL;
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, bytes));
    CUDA_OK(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice));
    return p;
}
