/* The kernels at the int32 edge: one expert, k = 1, calls of over 2^31 - 20
 * tokens whose plan ends within a few positions of INT32_MAX, so that every
 * loop stepping over positions or tokens there would pass it if it counted
 * in int32:
 *   - gpu_int32_edge_short_runs: block_m 5, 2147483641 tokens; padding
 *     written in runs of 4 lanes up to position 2147483644 (2^31 - 4);
 *   - gpu_int32_edge_long_runs: block_m 18, 2147483629 tokens; padding
 *     written by a warp, 32 positions a step, up to 2147483645;
 *   - gpu_int32_edge_one_cta: the first shape on one CTA (forced tiny, as
 *     where a grid cannot be launched): 16 warps share 2147483641 tokens;
 *   - gpu_int32_edge_wide: the first shape through the wide kernels, as a
 *     router of redundant experts with one physical expert (its one
 *     replica), whose load counts every pair.
 * About 42 GB of device memory: the outputs, fp32 logits, and before
 * sorted_token_ids 2^31 elements of poison, where a position that wrapped
 * negative would land. Every element of every output, guard and that
 * region is checked. Skipped without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_plan.h"
#include "test_support.h"

#define GUARD_BYTES ((size_t)1 << 20)
#define POISON_BYTE 0x5A
#define READ_CHUNK ((size_t)256 << 20)

static size_t align256(size_t x) { return (x + 255) / 256 * 256; }

typedef struct arena {
    unsigned char *base;
    size_t bytes;
    unsigned char *host; /* pinned, READ_CHUNK bytes */
} arena;

/* Calls want(i, &expected) for every 4-byte element i of [at, at + count)
 * of device memory and fails on the first element that differs. */
typedef int32_t (*element_rule)(int64_t i, const void *ctx);

static void expect_elements(arena *ar, const void *device, int64_t count, element_rule want, const void *ctx,
                            const char *what) {
    const int64_t per_chunk = (int64_t)(READ_CHUNK / 4);
    for (int64_t first = 0; first < count; first += per_chunk) {
        const int64_t n = count - first < per_chunk ? count - first : per_chunk;
        CUDA_OK(cudaMemcpy(ar->host, (const char *)device + first * 4, (size_t)n * 4, cudaMemcpyDeviceToHost));
        const int32_t *got = (const int32_t *)(const void *)ar->host;
        for (int64_t j = 0; j < n; ++j) {
            const int32_t w = want(first + j, ctx);
            if (got[j] != w) fail_msg("%s[%" PRId64 "] = %d (0x%08x), want %d", what, first + j, got[j], got[j], w);
        }
    }
}

static int32_t poison_rule(int64_t i, const void *ctx) {
    (void)i;
    (void)ctx;
    return (int32_t)0x5A5A5A5Au;
}

typedef struct plan_shape {
    int32_t M, block_m;
    int64_t live, capacity;
} plan_shape;

static int32_t sorted_rule(int64_t i, const void *ctx) {
    const plan_shape *s = ctx;
    if (i < s->M) return (int32_t)i; /* one expert: pair i at position i */
    if (i < s->capacity) return s->M;   /* padding, then tail fill: the sentinel */
    return (int32_t)0x5A5A5A5Au;
}

static int32_t expert_ids_rule(int64_t i, const void *ctx) {
    const plan_shape *s = ctx;
    if (i < s->live / s->block_m) return 0;
    if (i < s->capacity / s->block_m) return -1;
    return (int32_t)0x5A5A5A5Au;
}

static int32_t value_then_poison(int64_t i, const void *ctx) {
    const int32_t *v = ctx; /* {count, value} */
    return i < v[0] ? v[1] : (int32_t)0x5A5A5A5Au;
}

static void route_int32_edge(int32_t M, int32_t block_m, int32_t force, int replicas) {
    alphamoe_router *r = NULL;
    {
        alphamoe_params p = test_params(1, 1, block_m, M, ALPHAMOE_FLAG_TAIL_FILL);
        p.force_specialization = force;
        if (replicas) {
            p.flags |= ALPHAMOE_FLAG_REDUNDANT_EXPERTS;
            p.num_physical_experts = 1;
            p.replica_slots = 1;
        }
        ROUTE_OK(alphamoe_router_create(&p, &r));
    }
    alphamoe_sizes z;
    memset(&z, 0, sizeof z);
    z.struct_size = sizeof z;
    ROUTE_OK(alphamoe_router_sizes(r, &z));
    plan_shape s = {M, block_m, 0, z.sorted_token_ids.elements};
    s.live = ((int64_t)M + block_m - 1) / block_m * block_m;
    if (s.live > INT32_MAX || s.live <= INT32_MAX - 20) fail_msg("the shape does not end at the int32 edge");

    /* One allocation, in this order: the region a negative position would
     * hit, sorted_token_ids, expert_ids, topk_ids, topk_weights, the small
     * outputs, the logits, the workspace. */
    const size_t low = align256((size_t)1 << 33) + GUARD_BYTES;
    const size_t sorted_bytes = align256((size_t)z.sorted_token_ids.bytes + GUARD_BYTES);
    const size_t blocks_bytes = align256((size_t)z.expert_ids.bytes + GUARD_BYTES);
    const size_t ids_bytes = align256((size_t)z.topk_ids.bytes + GUARD_BYTES);
    const size_t small_bytes = GUARD_BYTES;
    const size_t logits_bytes = align256((size_t)M * 4);
    const size_t poisoned = low + sorted_bytes + blocks_bytes + 2 * ids_bytes + small_bytes;
    arena ar = {NULL, poisoned + logits_bytes + align256((size_t)z.workspace.bytes), NULL};
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (free_bytes < ar.bytes)
        fail_msg("this test needs %zu bytes of device memory, %zu are free", ar.bytes, free_bytes);
    CUDA_OK(cudaMalloc((void **)&ar.base, ar.bytes));
    CUDA_OK(cudaMallocHost((void **)&ar.host, READ_CHUNK));
    unsigned char *at = ar.base + low;
    int32_t *sorted = (int32_t *)(void *)at;
    int32_t *blocks = (int32_t *)(void *)(at += sorted_bytes);
    int32_t *ids = (int32_t *)(void *)(at += blocks_bytes);
    float *weights = (float *)(void *)(at += ids_bytes);
    int32_t *small = (int32_t *)(void *)(at += ids_bytes); /* ntpp, counts, offsets: 256 bytes apart */
    float *logits = (float *)(void *)(at += small_bytes);
    void *workspace = at + logits_bytes;
    CUDA_OK(cudaMemset(ar.base, POISON_BYTE, poisoned));
    CUDA_OK(cudaMemset(logits, 0, logits_bytes));
    CUDA_OK(cudaMemset(workspace, 0, (size_t)z.workspace.bytes));

    alphamoe_buffers b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.topk_ids = ids;
    b.topk_weights = weights;
    b.sorted_token_ids = sorted;
    b.expert_ids = blocks;
    b.num_tokens_post_padded = small;
    b.expert_counts = small + 64;
    b.expert_offsets = small + 128;
    b.sorted_token_ids_capacity = z.sorted_token_ids.elements;
    b.expert_ids_capacity = z.expert_ids.elements;
    b.workspace = workspace;
    b.workspace_bytes = (size_t)z.workspace.bytes;
    /* The replica tables and the load, past the small outputs' guard. */
    int32_t *tables = small + 224;
    const int32_t tables_host[3] = {0, 1, 0}; /* logical_to_physical, replica_count, physical_load */
    if (replicas) {
        CUDA_OK(cudaMemcpy(tables, tables_host, sizeof tables_host, cudaMemcpyHostToDevice));
        b.logical_to_physical = tables;
        b.replica_count = tables + 1;
        b.physical_load = tables + 2;
    }
    print_message("# E=1 k=1 block_m=%d M=%d (%s%s): live length %" PRId64 ", capacity %" PRId64 "\n", block_m, M,
                  force ? alphamoe_specialization_name((alphamoe_specialization)force) : "auto",
                  replicas ? ", redundant experts: the wide kernels" : "", s.live, s.capacity);
    ROUTE_OK(alphamoe_route(r, M, logits, &b, NULL));
    CUDA_OK(cudaDeviceSynchronize());

    expect_elements(&ar, ar.base, (int64_t)(low / 4), poison_rule, NULL, "the region before sorted_token_ids");
    expect_elements(&ar, sorted, (int64_t)(sorted_bytes / 4), sorted_rule, &s, "sorted_token_ids");
    expect_elements(&ar, blocks, (int64_t)(blocks_bytes / 4), expert_ids_rule, &s, "expert_ids");
    const int32_t zero_ids[2] = {M, 0};
    expect_elements(&ar, ids, (int64_t)(ids_bytes / 4), value_then_poison, zero_ids, "topk_ids");
    const float one = 1.0f; /* the softmax of one logit */
    int32_t one_bits[2] = {M, 0};
    memcpy(&one_bits[1], &one, 4);
    expect_elements(&ar, weights, (int64_t)(ids_bytes / 4), value_then_poison, one_bits, "topk_weights (bits)");
    int32_t small_host[192];
    CUDA_OK(cudaMemcpy(small_host, small, sizeof small_host, cudaMemcpyDeviceToHost));
    assert_int_equal(small_host[0], s.live);
    assert_int_equal(small_host[64], M);
    assert_int_equal(small_host[128], 0);
    assert_int_equal(small_host[129], s.live);
    for (int i = 0; i < 192; ++i)
        if (i != 0 && i != 64 && i != 128 && i != 129 && small_host[i] != (int32_t)0x5A5A5A5Au)
            fail_msg("small outputs: word %d written (%d)", i, small_host[i]);
    expect_elements(&ar, small + 192, 32, poison_rule, NULL, "small outputs' guard");
    if (replicas) {
        int32_t tables_after[3];
        CUDA_OK(cudaMemcpy(tables_after, tables, sizeof tables_after, cudaMemcpyDeviceToHost));
        if (tables_after[0] != 0 || tables_after[1] != 1) fail_msg("the replica tables were written");
        if (tables_after[2] != M) fail_msg("physical_load[0] = %d, want %d (every pair)", tables_after[2], M);
    }
    const int64_t rest = replicas ? 227 : 224;
    expect_elements(&ar, small + rest, (int64_t)(small_bytes / 4) - rest, poison_rule, NULL, "small outputs' guard");
    CUDA_OK(cudaFreeHost(ar.host));
    CUDA_OK(cudaFree(ar.base));
    alphamoe_router_destroy(r);
}

static void gpu_int32_edge_short_runs(void **state) {
    (void)state;
    route_int32_edge(2147483641, 5, ALPHAMOE_SPECIALIZATION_AUTO, 0);
}

static void gpu_int32_edge_long_runs(void **state) {
    (void)state;
    route_int32_edge(2147483629, 18, ALPHAMOE_SPECIALIZATION_AUTO, 0);
}

static void gpu_int32_edge_wide(void **state) {
    (void)state;
    route_int32_edge(2147483641, 5, 0, 1);
}

static void gpu_int32_edge_one_cta(void **state) {
    (void)state;
    route_int32_edge(2147483641, 5, ALPHAMOE_SPECIALIZATION_TINY, 0);
}

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    test_base_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_int32_edge_short_runs),
        cmocka_unit_test(gpu_int32_edge_long_runs),
        cmocka_unit_test(gpu_int32_edge_one_cta),
        cmocka_unit_test(gpu_int32_edge_wide),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("gpu_int32_edges", tests, NULL, NULL);
}
