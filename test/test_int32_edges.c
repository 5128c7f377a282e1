/* The CPU reference routing a plan at the int32 edge: one plan expert that
 * holds 2147483646 pairs, the largest multiple of block_m 3 that fits
 * int32. The group's count rounded up to block_m passes INT32_MAX on the way
 * (count + block_m - 1), although the padded length itself fits. The pairs
 * come as cheaply as the reference takes them: M = 153391689 tokens of all
 * 14 of 14 experts, an expert map giving every one of them local id 0.
 *
 * Each array of up to 2^31 elements is 8 GiB of address space: a chunk of
 * one memory file mapped over and over (aliased pages), behind and before a
 * region that may not be touched at all, 8 GiB and more either side, so a
 * write at any index from -2^31 to 2^31 outside the array faults. The
 * logits are all NaN (ids by index, weights 0, no exp to take). Every chunk
 * is checked against the last lap of writes through it: element j holds
 * what index j + C n, the last one below the extent, must hold. Needs no
 * GPU. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_support.h"

/* Small enough to stay in cache, large enough for few mappings. */
#define CHUNK_BYTES ((size_t)2 << 20)
#define CHUNK_ELEMENTS ((int64_t)(CHUNK_BYTES / 4))

typedef struct aliased {
    unsigned char *reserved; /* the whole reservation, guards included */
    size_t reserved_bytes;
    int32_t *elements;       /* element 0 of the array */
    int64_t count;
    unsigned char *chunk;    /* the chunk's memory, through its own mapping */
    int fd;
} aliased;

/* An array of `count` 4-byte elements whose every CHUNK_BYTES alias one
 * chunk, with at least 8 GiB + one chunk of untouchable space either side. */
static void aliased_map(aliased *a, int64_t count) {
    memset(a, 0, sizeof *a);
    a->count = count;
    const size_t bytes = ((size_t)count * 4 + CHUNK_BYTES - 1) / CHUNK_BYTES * CHUNK_BYTES;
    const size_t guard = ((size_t)1 << 33) + CHUNK_BYTES;
    a->reserved_bytes = guard + bytes + guard;
    a->reserved = mmap(NULL, a->reserved_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a->reserved == MAP_FAILED) fail_msg("reserving %zu bytes of address space failed", a->reserved_bytes);
    a->fd = memfd_create("alphamoe-int32-edge", 0);
    if (a->fd < 0 || ftruncate(a->fd, (off_t)CHUNK_BYTES) != 0) fail_msg("memfd_create/ftruncate failed");
    for (size_t at = 0; at < bytes; at += CHUNK_BYTES)
        if (mmap(a->reserved + guard + at, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE,
                 a->fd, 0) ==
            MAP_FAILED)
            fail_msg("mapping chunk %zu failed", at / CHUNK_BYTES);
    a->chunk = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
    if (a->chunk == MAP_FAILED) fail_msg("mapping the chunk failed");
    a->elements = (int32_t *)(void *)(a->reserved + guard);
}

static void aliased_unmap(aliased *a) {
    munmap(a->chunk, CHUNK_BYTES);
    munmap(a->reserved, a->reserved_bytes);
    close(a->fd);
}

/* Element j of the chunk must hold want(i) for i, the last index of the
 * array that maps to it (i = j + C n < count). */
static void aliased_expect(const aliased *a, const char *what, int32_t (*want)(int64_t i)) {
    const int32_t *chunk = (const int32_t *)(const void *)a->chunk;
    for (int64_t j = 0; j < CHUNK_ELEMENTS && j < a->count; ++j) {
        const int64_t i = j + (a->count - 1 - j) / CHUNK_ELEMENTS * CHUNK_ELEMENTS;
        if (chunk[j] != want(i))
            fail_msg("%s[%" PRId64 "] = %d, want %d", what, i, chunk[j], want(i));
    }
}

static int32_t zero(int64_t i) {
    (void)i;
    return 0;
}
static int32_t itself(int64_t i) { return (int32_t)i; }
static int32_t expert_of_pair(int64_t i) { return (int32_t)(i % 14); }

static void test_route_host_int32_edge(void **state) {
    (void)state;
    const int32_t E = 14, k = 14, M = 153391689;
    const int64_t P = (int64_t)M * k; /* 2147483646 */
    alphamoe_params p = test_params(E, k, 3, M, ALPHAMOE_FLAG_TAIL_FILL | ALPHAMOE_FLAG_EXPERT_MAP);
    p.local_expert_count = 1;
    alphamoe_router *r = NULL;
    assert_int_equal(alphamoe_router_create(&p, &r), ALPHAMOE_OK);
    alphamoe_sizes z;
    memset(&z, 0, sizeof z);
    z.struct_size = sizeof z;
    assert_int_equal(alphamoe_router_sizes(r, &z), ALPHAMOE_OK);
    /* Contract section 5 for one plan expert: ceil(P / 3) blocks. */
    assert_int_equal(z.topk_ids.elements, P);
    assert_int_equal(z.sorted_token_ids.elements, P);
    assert_int_equal(z.expert_ids.elements, P / 3);

    aliased logits, ids, weights, sorted, blocks;
    aliased_map(&logits, P);
    aliased_map(&ids, z.topk_ids.elements);
    aliased_map(&weights, z.topk_weights.elements);
    aliased_map(&sorted, z.sorted_token_ids.elements);
    aliased_map(&blocks, z.expert_ids.elements);
    memset(logits.chunk, 0xFF, CHUNK_BYTES); /* 0xFFFFFFFF: a NaN */
    const aliased *outputs[] = {&ids, &weights, &sorted, &blocks};
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; ++i) memset(outputs[i]->chunk, 0x5A, CHUNK_BYTES);
    int32_t ntpp[1 + TEST_GUARD], counts[1 + TEST_GUARD], offsets[2 + TEST_GUARD], map[14];
    for (int i = 0; i < 1 + TEST_GUARD; ++i) ntpp[i] = counts[i] = TEST_POISON_I32;
    for (int i = 0; i < 2 + TEST_GUARD; ++i) offsets[i] = TEST_POISON_I32;
    for (int i = 0; i < 14; ++i) map[i] = 0;

    alphamoe_buffers b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.topk_ids = ids.elements;
    b.topk_weights = (float *)(void *)weights.elements;
    b.sorted_token_ids = sorted.elements;
    b.expert_ids = blocks.elements;
    b.num_tokens_post_padded = ntpp;
    b.expert_counts = counts;
    b.expert_offsets = offsets;
    b.sorted_token_ids_capacity = z.sorted_token_ids.elements;
    b.expert_ids_capacity = z.expert_ids.elements;
    b.expert_map = map;
    print_message("# E=14 k=14 block_m=3 M=%d, all experts local id 0: %" PRId64 " pairs in one group\n", M, P);
    assert_int_equal(alphamoe_route_host(r, M, logits.elements, &b), ALPHAMOE_OK);

    /* The padded length is P itself (a multiple of 3): no padding, no tail. */
    assert_int_equal(ntpp[0], P);
    assert_int_equal(counts[0], P);
    assert_int_equal(offsets[0], 0);
    assert_int_equal(offsets[1], P);
    for (int i = 1; i < 1 + TEST_GUARD; ++i) assert_int_equal(ntpp[i], TEST_POISON_I32);
    for (int i = 1; i < 1 + TEST_GUARD; ++i) assert_int_equal(counts[i], TEST_POISON_I32);
    for (int i = 2; i < 2 + TEST_GUARD; ++i) assert_int_equal(offsets[i], TEST_POISON_I32);
    aliased_expect(&ids, "topk_ids (rows of NaN: by index)", expert_of_pair);
    aliased_expect(&weights, "topk_weights (bits; a row of NaN weighs 0)", zero);
    aliased_expect(&sorted, "sorted_token_ids", itself); /* one group: pair p at position p */
    aliased_expect(&blocks, "expert_ids", zero);
    aliased_unmap(&logits);
    aliased_unmap(&ids);
    aliased_unmap(&weights);
    aliased_unmap(&sorted);
    aliased_unmap(&blocks);
    alphamoe_router_destroy(r);
}

int main(void) {
    test_base_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_host_int32_edge),
    };
    return cmocka_run_group_tests_name("int32_edges", tests, NULL, NULL);
}
