/* Runs README's C example as written: it must compile against the public
 * header, route a batch on the GPU (skipped without one), and route it as
 * the CPU reference does from the same logits. The example keeps its
 * router and buffers to itself: cudaMalloc and alphamoe_route are wrapped
 * around it to see them, every allocation poisoned first, so that every
 * element of every output is checked, the unwritten ones included. */
#include <alphamoe/router.h>
#include <cuda_runtime.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test.h"
#include "test_support.h"

#define POISON_BYTE 0x5A
#define POISON_WORD 0x5A5A5A5A

static cudaError_t poisoned_malloc(void **ptr, size_t bytes) {
    const cudaError_t err = cudaMalloc(ptr, bytes);
    return err == cudaSuccess ? cudaMemset(*ptr, POISON_BYTE, bytes) : err;
}

static const alphamoe_router *seen_router;
static alphamoe_buffers seen_buffers;

static alphamoe_status recording_route(const alphamoe_router *router, int32_t num_tokens, const void *logits,
                                       const alphamoe_buffers *buffers, struct CUstream_st *stream) {
    seen_router = router;
    seen_buffers = *buffers;
    return alphamoe_route(router, num_tokens, logits, buffers, stream);
}

#define cudaMalloc poisoned_malloc
#define alphamoe_route recording_route
#include "readme_example.h"
#undef cudaMalloc
#undef alphamoe_route

static int failures;
#define EXPECT(cond, ...)                      \
    do {                                       \
        if (!(cond)) {                         \
            fprintf(stderr, "FAIL: " __VA_ARGS__); \
            fprintf(stderr, "\n");             \
            if (++failures > 20) exit(1);      \
        }                                      \
    } while (0)

/* `count` words of device memory into a new host array. */
static int32_t *read_back(const void *device, int64_t count) {
    int32_t *host = malloc((size_t)(count > 0 ? count : 1) * 4);
    if (!host || cudaMemcpy(host, device, (size_t)count * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "FAIL: reading %" PRId64 " words back\n", count);
        exit(1);
    }
    return host;
}

/* The first `live` words equal `want`, the rest of `count` still poison. */
static void expect_words(const char *what, const int32_t *got, const int32_t *want, int64_t live, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
        if (i < live) EXPECT(got[i] == want[i], "%s[%" PRId64 "] = %d, the CPU reference says %d", what, i, got[i], want[i]);
        else EXPECT(got[i] == POISON_WORD, "%s[%" PRId64 "] = %d past the live extent %" PRId64, what, i, got[i], live);
    }
}

int main(void) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    enum { M = 333, E = 512 };
    test_rng rng;
    rng_seed_for_test(&rng, 0x4EAD);
    float *host = malloc(sizeof(float) * M * E);
    if (!host) return 1;
    fill_logits(&rng, host, M, E, E, LOGITS_RANDOM, 0);
    float *logits = NULL;
    if (cudaMalloc((void **)&logits, sizeof(float) * M * E) != cudaSuccess) return 1;
    cudaMemcpy(logits, host, sizeof(float) * M * E, cudaMemcpyHostToDevice);
    const int rc = route_layer(logits, M, 0);
    const cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        fprintf(stderr, "%s\n", cudaGetErrorString(err));
        return 1;
    }
    if (rc != 0 || seen_router == NULL) {
        fprintf(stderr, "FAIL: route_layer returned %d\n", rc);
        return 1;
    }

    host_plan want;
    if (host_plan_alloc(&want, seen_router, 0) != 0) return 1;
    host_plan_poison(&want);
    if (alphamoe_route_host(seen_router, M, host, &want.buffers) != ALPHAMOE_OK) return 1;
    const alphamoe_sizes *z = &want.sizes;
    const int64_t pairs = (int64_t)M * want.params.top_k;
    const alphamoe_buffers *b = &seen_buffers;
    int32_t *ntpp = read_back(b->num_tokens_post_padded, 1);
    int32_t *ids = read_back(b->topk_ids, z->topk_ids.elements);
    int32_t *weights = read_back(b->topk_weights, z->topk_weights.elements);
    int32_t *sorted = read_back(b->sorted_token_ids, z->sorted_token_ids.elements);
    int32_t *blocks = read_back(b->expert_ids, z->expert_ids.elements);
    const int32_t live = *want.num_tokens_post_padded;
    EXPECT(*ntpp == live, "num_tokens_post_padded %d, the CPU reference says %d", *ntpp, live);
    expect_words("topk_ids", ids, want.topk_ids, pairs, z->topk_ids.elements);
    for (int64_t i = 0; i < z->topk_weights.elements; ++i) {
        float w;
        memcpy(&w, &weights[i], 4);
        if (i < pairs)
            EXPECT(fabsf(w - want.topk_weights[i]) <= 4e-6f, "topk_weights[%" PRId64 "] = %.9g, the CPU reference says %.9g",
                   i, (double)w, (double)want.topk_weights[i]);
        else
            EXPECT(weights[i] == POISON_WORD, "topk_weights[%" PRId64 "] written past M * k", i);
    }
    expect_words("sorted_token_ids", sorted, want.sorted_token_ids, live, z->sorted_token_ids.elements);
    expect_words("expert_ids", blocks, want.expert_ids, live / want.params.block_m, z->expert_ids.elements);
    printf("README example: %d tokens, %" PRId64 " pairs, live length %d: %s\n", M, pairs, live,
           failures ? "DIFFERS from the CPU reference" : "equal to the CPU reference");
    free(ntpp);
    free(ids);
    free(weights);
    free(sorted);
    free(blocks);
    host_plan_free(&want);
    free(host);
    return failures ? 1 : 0;
}
