/* The validation matrix of the C API, host only: router creation, the
 * argument checks of both routing entry points, status strings, parameter
 * read-back and the variant selection function.
 *
 * Rejected routing calls are made with host memory even on the GPU entry
 * point: validation must finish before any driver call, so a rejected call
 * never touches the pointers it was given. Every rejection is followed by a
 * byte-for-byte check that no output, workspace or logits byte changed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

/* Any pointer the library must not store into *out on failure; it is never
 * dereferenced. */
static char sentinel_object;
#define SENTINEL_ROUTER ((alphamoe_router *)(void *)&sentinel_object)

/* Valid routing-flavour fields drawn at random for a shape: scoring, bias,
 * logits type, groups, scaling, expert parallelism. Shared-expert mode
 * stays valid (softmax, no groups) when p->flags has it. */
static void draw_valid_flavour(test_rng *rng, alphamoe_params *p) {
    const int32_t E = p->num_experts;
    const int shared = (p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) != 0;
    p->scoring = shared ? ALPHAMOE_SCORING_SOFTMAX : (int32_t)rng_below(rng, 3);
    if (p->scoring != ALPHAMOE_SCORING_SOFTMAX && rng_below(rng, 2)) p->flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
    if (rng_below(rng, 2)) p->flags |= ALPHAMOE_FLAG_NO_RENORMALIZE;
    p->logits_type = (int32_t)rng_below(rng, 3);
    p->num_groups = 0;
    p->topk_groups = 0;
    if (!shared && rng_below(rng, 2)) {
        int32_t g = 1 + (int32_t)rng_below(rng, (uint32_t)E);
        while (E % g) --g;
        const int32_t size = E / g;
        int32_t tg = 1 + (int32_t)rng_below(rng, (uint32_t)g);
        while ((int64_t)tg * size < p->top_k) ++tg;
        p->num_groups = g;
        p->topk_groups = rng_below(rng, 4) == 0 ? 0 : tg;
    }
    static const float scales[] = {0.0f, 1.0f, 2.5f, 2.827f, 1e-30f, 3e38f};
    p->routed_scaling_factor = scales[rng_below(rng, sizeof scales / sizeof scales[0])];
    p->local_expert_begin = 0;
    p->local_expert_count = 0;
    switch (rng_below(rng, 3)) {
    case 1:
        p->local_expert_count = 1 + (int32_t)rng_below(rng, (uint32_t)E);
        p->local_expert_begin = (int32_t)rng_below(rng, (uint32_t)(E - p->local_expert_count + 1));
        break;
    case 2:
        p->flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        p->local_expert_count = 1 + (int32_t)rng_below(rng, (uint32_t)E);
        break;
    default: break;
    }
}

/* A random parameter set that is valid in every field, so that changing one
 * field makes exactly that field invalid. */
static alphamoe_params random_valid_params(test_rng *rng) {
    const int32_t E = 1 + (int32_t)rng_below(rng, ALPHAMOE_MAX_EXPERTS);
    const int32_t k = 1 + (int32_t)rng_below(rng, (uint32_t)min_i32(E, ALPHAMOE_MAX_TOP_K));
    alphamoe_params p = test_params(E, k, 1 + (int32_t)rng_below(rng, ALPHAMOE_MAX_BLOCK_M),
                                    (int32_t)rng_below(rng, 200000), 0u);
    p.logits_row_stride = rng_below(rng, 2) ? 0 : E + (int64_t)rng_below(rng, 1000);
    p.flags = rng_below(rng, 2) ? ALPHAMOE_FLAG_TAIL_FILL : 0u;
    if (rng_below(rng, 2)) p.flags |= ALPHAMOE_FLAG_PDL;
    if (k >= 2 && rng_below(rng, 3) == 0) p.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
    p.force_specialization = (int32_t)rng_below(rng, 4);
    if (rng_below(rng, 3)) draw_valid_flavour(rng, &p);
    return p;
}

static void describe_params(const alphamoe_params *p, char *buf, size_t size) {
    snprintf(buf, size,
             "struct_size=%zu E=%d k=%d block_m=%d max_tokens=%d stride=%" PRId64
             " flags=0x%x spec=%d scoring=%d logits_type=%d groups=%d keep=%d scale=%g ep=%d+%d reserved=%u",
             p->struct_size, p->num_experts, p->top_k, p->block_m, p->max_tokens, p->logits_row_stride, p->flags,
             p->force_specialization, p->scoring, p->logits_type, p->num_groups, p->topk_groups,
             (double)p->routed_scaling_factor, p->local_expert_begin, p->local_expert_count, p->reserved);
}

static size_t logits_type_bytes_of(const alphamoe_params *p) { return p->logits_type == ALPHAMOE_LOGITS_F32 ? 4u : 2u; }

/* create must fail with `want`, leave *out as it was and not touch params. */
static void expect_create_status(const alphamoe_params *p, alphamoe_status want, const char *what) {
    alphamoe_params before;
    if (p) before = *p;
    alphamoe_router *out = SENTINEL_ROUTER;
    const alphamoe_status s = alphamoe_router_create(p, &out);
    char desc[256] = "params=NULL";
    if (p) describe_params(p, desc, sizeof desc);
    if (out != SENTINEL_ROUTER) {
        if (s == ALPHAMOE_OK) alphamoe_router_destroy(out);
        fail_msg("%s (%s): *out changed on status %d", what, desc, (int)s);
    }
    if (s != want)
        fail_msg("%s (%s): expected %s, got %s", what, desc, alphamoe_status_string(want),
                 alphamoe_status_string(s));
    if (p) assert_memory_equal(p, &before, sizeof before);
}

static alphamoe_router *expect_create_ok(const alphamoe_params *p, const char *what) {
    alphamoe_router *out = SENTINEL_ROUTER;
    const alphamoe_status s = alphamoe_router_create(p, &out);
    if (s != ALPHAMOE_OK) {
        char desc[256];
        describe_params(p, desc, sizeof desc);
        fail_msg("%s (%s): expected success, got %s", what, desc, alphamoe_status_string(s));
    }
    assert_non_null(out);
    assert_ptr_not_equal(out, SENTINEL_ROUTER);
    return out;
}

#define RANDOM_BASES 40

/* Each value of `bad`, written into the int32_t field at byte `field` of
 * random valid parameters (an offsetof), fails creation with `want`. */
static void expect_field_values_rejected(uint64_t seed, size_t field, const int32_t *bad, size_t n,
                                         alphamoe_status want, const char *what) {
    test_rng rng;
    rng_seed_for_test(&rng, seed);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        for (size_t j = 0; j < n; ++j) {
            memcpy((char *)&p + field, &bad[j], sizeof bad[j]);
            expect_create_status(&p, want, what);
        }
    }
}

/* ------------------------------------------------------------ create */

static void test_create_null_pointers(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1001);
    expect_create_status(NULL, ALPHAMOE_ERROR_NULL_POINTER, "params NULL");
    for (int i = 0; i < RANDOM_BASES; ++i) {
        const alphamoe_params p = random_valid_params(&rng);
        assert_int_equal(alphamoe_router_create(&p, NULL), ALPHAMOE_ERROR_NULL_POINTER);
    }
}

static void test_create_struct_size(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1002);
    /* Below the first version, and sizes ending inside a field appended
     * later (between the published versions). */
    const size_t v1 = offsetof(alphamoe_params, scoring);
    const size_t small[] = {0, 1, 4, 8, v1 / 2, v1 - 4, v1 - 1, v1 + 1, v1 + 2, v1 + 4, v1 + 6,
                            sizeof(alphamoe_params) - 4, sizeof(alphamoe_params) - 1};
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        for (size_t j = 0; j < sizeof small / sizeof small[0]; ++j) {
            p.struct_size = small[j];
            expect_create_status(&p, ALPHAMOE_ERROR_STRUCT_SIZE, "struct_size too small");
        }
    }
}

static void test_create_num_experts(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1003);
    const int32_t bad[] = {0, -1, ALPHAMOE_MAX_EXPERTS + 1, 4096, INT32_MIN, INT32_MAX};
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        /* A stride that is valid for the largest E keeps the stride check
         * out of the way whatever E becomes. */
        p.logits_row_stride = 0;
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; ++j) {
            p.num_experts = bad[j];
            expect_create_status(&p, ALPHAMOE_ERROR_NUM_EXPERTS, "num_experts out of range");
        }
    }
}

static void test_create_top_k(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1004);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        p.flags &= ~ALPHAMOE_FLAG_SHARED_EXPERT;
        const int32_t E = p.num_experts;
        const int32_t bad[] = {0, -1, ALPHAMOE_MAX_TOP_K + 1, INT32_MIN, INT32_MAX, E + 1, min_i32(E, ALPHAMOE_MAX_TOP_K) + 1};
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; ++j) {
            p.top_k = bad[j];
            expect_create_status(&p, ALPHAMOE_ERROR_TOP_K, "top_k out of range");
        }
    }
    /* k > E while k <= the largest top_k. */
    for (int32_t E = 1; E < ALPHAMOE_MAX_TOP_K; ++E) {
        alphamoe_params p = test_params(E, E + 1, 8, 64, 0u);
        expect_create_status(&p, ALPHAMOE_ERROR_TOP_K, "top_k > num_experts");
        p.top_k = ALPHAMOE_MAX_TOP_K;
        expect_create_status(&p, ALPHAMOE_ERROR_TOP_K, "largest top_k > num_experts");
    }
}

static void test_create_block_m(void **state) {
    (void)state;
    const int32_t bad[] = {0, -1, 257, 512, INT32_MIN, INT32_MAX};
    expect_field_values_rejected(0x1005, offsetof(alphamoe_params, block_m), bad, sizeof bad / sizeof bad[0],
                                 ALPHAMOE_ERROR_BLOCK_M, "block_m out of range");
}

static void test_create_max_tokens(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1006);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        p.logits_row_stride = 0;
        p.max_tokens = -1 - (int32_t)rng_below(&rng, 1000);
        expect_create_status(&p, ALPHAMOE_ERROR_MAX_TOKENS, "max_tokens < 0");
        p.max_tokens = -1;
        expect_create_status(&p, ALPHAMOE_ERROR_MAX_TOKENS, "max_tokens -1");
        p.max_tokens = INT32_MIN;
        expect_create_status(&p, ALPHAMOE_ERROR_MAX_TOKENS, "max_tokens INT32_MIN");
        if (p.top_k >= 2) {
            /* The smallest max_tokens whose pair count passes INT32_MAX. */
            p.max_tokens = (int32_t)(INT32_MAX / p.top_k + 1);
            expect_create_status(&p, ALPHAMOE_ERROR_MAX_TOKENS, "max_tokens * k > INT32_MAX");
            p.max_tokens = INT32_MAX;
            expect_create_status(&p, ALPHAMOE_ERROR_MAX_TOKENS, "max_tokens INT32_MAX, k >= 2");
        }
    }

    /* Pairs fit int32 but the padded capacity does not. */
    {
        alphamoe_params p = test_params(1, 1, 2, INT32_MAX, 0u);
        assert_true(formula_capacity(INT32_MAX, 1, 2) > INT32_MAX);
        expect_create_status(&p, ALPHAMOE_ERROR_MAX_TOKENS, "capacity > INT32_MAX (E=1 bm=2)");
    }
    for (int i = 0; i < RANDOM_BASES; ++i) {
        const int32_t E = 2 + (int32_t)rng_below(&rng, ALPHAMOE_MAX_EXPERTS - 1);
        const int32_t bm = 2 + (int32_t)rng_below(&rng, ALPHAMOE_MAX_BLOCK_M - 1);
        const int32_t k = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16));
        /* Largest max_tokens whose capacity still fits, found by bisection on
         * the contract's formula (monotone in max_tokens). */
        int64_t lo = 0, hi = INT32_MAX / k;
        if (formula_capacity(hi * k, E, bm) <= INT32_MAX) continue;
        while (hi - lo > 1) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (formula_capacity(mid * k, E, bm) <= INT32_MAX) lo = mid;
            else hi = mid;
        }
        alphamoe_params p = test_params(E, k, bm, (int32_t)lo, 0u);
        alphamoe_router *r = expect_create_ok(&p, "largest max_tokens whose capacity fits");
        alphamoe_router_destroy(r);
        p.max_tokens = (int32_t)hi;
        assert_true(hi * k <= INT32_MAX);
        expect_create_status(&p, ALPHAMOE_ERROR_MAX_TOKENS, "capacity one step past INT32_MAX");
    }
}

static void test_create_shared_expert(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1007);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        p.top_k = 1;
        p.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
        expect_create_status(&p, ALPHAMOE_ERROR_SHARED_EXPERT, "shared expert with k=1");
    }
    alphamoe_params p = test_params(1, 1, 1, 1, 0u);
    p.flags = ALPHAMOE_FLAG_SHARED_EXPERT;
    expect_create_status(&p, ALPHAMOE_ERROR_SHARED_EXPERT, "shared expert with E=1 k=1");
}

static void test_create_row_stride(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1008);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        const int32_t E = p.num_experts;
        if (E >= 2) {
            p.logits_row_stride = 1 + (int64_t)rng_below(&rng, (uint32_t)(E - 1));
            expect_create_status(&p, ALPHAMOE_ERROR_ROW_STRIDE, "0 < stride < E");
            p.logits_row_stride = E - 1;
            expect_create_status(&p, ALPHAMOE_ERROR_ROW_STRIDE, "stride E-1");
        }
        p.logits_row_stride = -1;
        expect_create_status(&p, ALPHAMOE_ERROR_ROW_STRIDE, "stride -1");
        p.logits_row_stride = INT64_MIN;
        expect_create_status(&p, ALPHAMOE_ERROR_ROW_STRIDE, "stride INT64_MIN");

        /* Strides whose last-row byte offset cannot be represented in 64 bits. */
        p.max_tokens = 2 + (int32_t)rng_below(&rng, 100000);
        p.logits_row_stride = INT64_MAX;
        expect_create_status(&p, ALPHAMOE_ERROR_ROW_STRIDE, "stride INT64_MAX");
        const int64_t bytes = (int64_t)logits_type_bytes_of(&p);
        p.logits_row_stride = INT64_MAX / bytes + 1;
        expect_create_status(&p, ALPHAMOE_ERROR_ROW_STRIDE, "stride * element size > INT64_MAX");
        p.logits_row_stride = INT64_MAX / bytes / (p.max_tokens - 1) + 1;
        expect_create_status(&p, ALPHAMOE_ERROR_ROW_STRIDE,
                             "(max_tokens - 1) * stride * element size > INT64_MAX");
    }
}

static void test_create_flags(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1009);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        const uint32_t valid = p.flags;
        for (int bit = 0; bit < 32; ++bit) {
            const uint32_t f = 1u << bit;
            if (f & ALPHAMOE_FLAG_ALL) continue;
            p.flags = valid | f;
            expect_create_status(&p, ALPHAMOE_ERROR_FLAGS, "unknown flag bit");
        }
        p.flags = valid | ~ALPHAMOE_FLAG_ALL;
        expect_create_status(&p, ALPHAMOE_ERROR_FLAGS, "every unknown flag bit");
        p.flags = 0xFFFFFFFFu;
        if (p.top_k >= 2) expect_create_status(&p, ALPHAMOE_ERROR_FLAGS, "all flag bits");
    }
}

static void test_create_specialization(void **state) {
    (void)state;
    const int32_t bad[] = {-1, 4, 5, 100, INT32_MIN, INT32_MAX};
    expect_field_values_rejected(0x100A, offsetof(alphamoe_params, force_specialization), bad,
                                 sizeof bad / sizeof bad[0], ALPHAMOE_ERROR_SPECIALIZATION, "unknown specialization");
}

static void test_create_scoring(void **state) {
    (void)state;
    const int32_t bad[] = {-1, 3, 4, 100, INT32_MIN, INT32_MAX};
    expect_field_values_rejected(0x100D, offsetof(alphamoe_params, scoring), bad, sizeof bad / sizeof bad[0],
                                 ALPHAMOE_ERROR_SCORING, "unknown scoring");
    /* A correction bias steers per-expert scores only. */
    test_rng rng;
    rng_seed_for_test(&rng, 0x1014);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        p.scoring = ALPHAMOE_SCORING_SOFTMAX;
        p.flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
        expect_create_status(&p, ALPHAMOE_ERROR_SCORING, "correction bias with softmax scoring");
    }
}

static void test_create_logits_type(void **state) {
    (void)state;
    const int32_t bad[] = {-1, 3, 4, 100, INT32_MIN, INT32_MAX};
    expect_field_values_rejected(0x100E, offsetof(alphamoe_params, logits_type), bad, sizeof bad / sizeof bad[0],
                                 ALPHAMOE_ERROR_LOGITS_TYPE, "unknown logits_type");
}

static void test_create_groups(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x100F);
    for (int i = 0; i < 4 * RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        const int32_t E = p.num_experts;
        const alphamoe_params base = p;
        const int32_t bad_groups[] = {-1, -2, INT32_MIN, E + 1, INT32_MAX};
        for (size_t j = 0; j < sizeof bad_groups / sizeof bad_groups[0]; ++j) {
            p = base;
            p.num_groups = bad_groups[j];
            expect_create_status(&p, ALPHAMOE_ERROR_GROUPS, "num_groups out of range");
        }
        /* A count that does not divide E. */
        for (int32_t g = 2; g <= E && g < 600; g += 1 + (int32_t)rng_below(&rng, 7)) {
            if (E % g == 0) continue;
            p = base;
            p.num_groups = g;
            p.topk_groups = 0;
            expect_create_status(&p, ALPHAMOE_ERROR_GROUPS, "num_groups does not divide num_experts");
        }
        /* topk_groups outside [0, num_groups]; with no groups only 0 and 1. */
        p = base;
        const int32_t G = p.num_groups > 1 ? p.num_groups : 1;
        const int32_t bad_keep[] = {-1, INT32_MIN, G + 1, INT32_MAX};
        for (size_t j = 0; j < sizeof bad_keep / sizeof bad_keep[0]; ++j) {
            p.topk_groups = bad_keep[j];
            expect_create_status(&p, ALPHAMOE_ERROR_GROUPS, "topk_groups out of range");
        }
        /* Kept groups holding fewer than k experts. */
        p = base;
        p.flags &= ~ALPHAMOE_FLAG_SHARED_EXPERT;
        if (p.top_k >= 2) {
            int32_t g = p.top_k;
            while (g <= E && E % g) ++g;
            if (g <= E) {
                p.num_groups = g;
                const int32_t size = E / g;
                p.topk_groups = (p.top_k - 1) / size; /* holds at most k - 1 */
                if (p.topk_groups >= 1) expect_create_status(&p, ALPHAMOE_ERROR_GROUPS, "kept groups hold < k experts");
            }
        }
    }
    /* DeepSeek-V3 shapes at the edge: 8 groups of 32, k = 8. */
    alphamoe_params p = test_params(256, 8, 16, 100, 0u);
    p.scoring = ALPHAMOE_SCORING_SIGMOID;
    p.num_groups = 8;
    p.topk_groups = 1;
    alphamoe_router_destroy(expect_create_ok(&p, "one group of 32 holds k = 8"));
    p.num_groups = 64; /* groups of 4: two hold 8 */
    p.topk_groups = 1;
    expect_create_status(&p, ALPHAMOE_ERROR_GROUPS, "one group of 4 for k = 8");
    p.topk_groups = 2;
    alphamoe_router_destroy(expect_create_ok(&p, "two groups of 4 hold k = 8"));
    p.num_groups = 3;
    p.topk_groups = 0;
    expect_create_status(&p, ALPHAMOE_ERROR_GROUPS, "3 does not divide 256");
}

static void test_create_scaling_factor(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1010);
    const float bad[] = {-1.0f, -2.5f, -1.17549435e-38f, -1e-45f, INFINITY, -INFINITY, NAN, -NAN,
                         bits_to_float(0x7FC12345u), bits_to_float(0x7F800001u)};
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; ++j) {
            p.routed_scaling_factor = bad[j];
            expect_create_status(&p, ALPHAMOE_ERROR_SCALING_FACTOR, "scaling factor negative or not finite");
        }
    }
}

static void test_create_expert_parallel(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1011);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params base = random_valid_params(&rng);
        base.flags &= ~ALPHAMOE_FLAG_EXPERT_MAP;
        base.local_expert_begin = 0;
        base.local_expert_count = 0;
        const int32_t E = base.num_experts;
        const struct {
            int32_t begin, count;
        } ranges[] = {{0, -1}, {0, INT32_MIN}, {-1, 1}, {INT32_MIN, 1}, {0, E + 1}, {1, E}, {E, 1},
                      {E - 1, 2}, {INT32_MAX, INT32_MAX}, {1, INT32_MAX}, {INT32_MAX, 1}, {1, 0}, {-1, 0}};
        for (size_t j = 0; j < sizeof ranges / sizeof ranges[0]; ++j) {
            alphamoe_params p = base;
            p.local_expert_begin = ranges[j].begin;
            p.local_expert_count = ranges[j].count;
            char what[128];
            snprintf(what, sizeof what, "local range begin %d count %d of %d experts", ranges[j].begin,
                     ranges[j].count, E);
            expect_create_status(&p, ALPHAMOE_ERROR_EXPERT_PARALLEL, what);
        }
        /* A map needs its local expert count, at most E, and no range. */
        const struct {
            int32_t begin, count;
        } maps[] = {{0, 0}, {0, -1}, {0, E + 1}, {0, INT32_MAX}, {1, 1}, {-1, 1}};
        for (size_t j = 0; j < sizeof maps / sizeof maps[0]; ++j) {
            alphamoe_params p = base;
            p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
            p.local_expert_begin = maps[j].begin;
            p.local_expert_count = maps[j].count;
            expect_create_status(&p, ALPHAMOE_ERROR_EXPERT_PARALLEL, "expert map settings");
        }
    }
}

static void test_create_reserved(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1012);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        p.reserved = 1u << rng_below(&rng, 32);
        expect_create_status(&p, ALPHAMOE_ERROR_INVALID_ARGUMENT, "reserved field not zero");
        p.reserved = 0;
        p.reserved2 = 1u << rng_below(&rng, 32);
        expect_create_status(&p, ALPHAMOE_ERROR_INVALID_ARGUMENT, "reserved2 field not zero");
    }
}

/* Hash routing needs a vocabulary, a vocabulary needs hash routing, and
 * nothing that steers a ranking or fixes a slot comes with it. */
static void test_create_hash_routing(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1015);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        p.flags &= ~(ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_SHARED_EXPERT | ALPHAMOE_FLAG_CORRECTION_BIAS);
        p.num_groups = p.topk_groups = 0;
        p.vocab_size = 0;
        alphamoe_router_destroy(expect_create_ok(&p, "no hash routing, no vocabulary"));
        p.vocab_size = 1 + (int32_t)rng_below(&rng, 200000);
        expect_create_status(&p, ALPHAMOE_ERROR_HASH_ROUTING, "a vocabulary without hash routing");
        p.flags |= ALPHAMOE_FLAG_HASH_ROUTING;
        alphamoe_router_destroy(expect_create_ok(&p, "hash routing"));
        const int32_t bad_vocab[] = {0, -1, INT32_MIN};
        const int32_t vocab = p.vocab_size;
        p.vocab_size = bad_vocab[rng_below(&rng, 3)];
        expect_create_status(&p, ALPHAMOE_ERROR_HASH_ROUTING, "hash routing without a vocabulary");
        p.vocab_size = vocab;
        if (p.scoring != ALPHAMOE_SCORING_SOFTMAX) {
            p.flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
            expect_create_status(&p, ALPHAMOE_ERROR_HASH_ROUTING, "hash routing with a correction bias");
            p.flags &= ~ALPHAMOE_FLAG_CORRECTION_BIAS;
        }
        if (p.top_k >= 2 && p.scoring == ALPHAMOE_SCORING_SOFTMAX) {
            p.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
            expect_create_status(&p, ALPHAMOE_ERROR_HASH_ROUTING, "hash routing with a shared expert");
            p.flags &= ~ALPHAMOE_FLAG_SHARED_EXPERT;
        }
        if (p.num_experts >= 2 && p.num_experts % 2 == 0) {
            p.num_groups = 2;
            p.topk_groups = 2;
            expect_create_status(&p, ALPHAMOE_ERROR_HASH_ROUTING, "hash routing with expert groups");
        }
    }
}

/* Redundant experts: P in [1, 2048] and R in [1, P] with the flag, both 0
 * without it; expert parallelism is then over the P physical experts. */
static void test_create_redundant_experts(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1016);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        p.flags &= ~(ALPHAMOE_FLAG_EXPERT_MAP | ALPHAMOE_FLAG_REDUNDANT_EXPERTS);
        p.local_expert_begin = p.local_expert_count = 0;
        const int32_t P = 1 + (int32_t)rng_below(&rng, ALPHAMOE_MAX_EXPERTS);
        const int32_t R = 1 + (int32_t)rng_below(&rng, (uint32_t)P);
        p.num_physical_experts = P;
        expect_create_status(&p, ALPHAMOE_ERROR_REDUNDANT_EXPERTS, "physical experts without the flag");
        p.num_physical_experts = 0;
        p.replica_slots = R;
        expect_create_status(&p, ALPHAMOE_ERROR_REDUNDANT_EXPERTS, "replica slots without the flag");
        p.flags |= ALPHAMOE_FLAG_REDUNDANT_EXPERTS;
        const struct {
            int32_t P, R;
        } bad[] = {{0, 0}, {0, 1}, {P, 0}, {P, -1}, {P, P + 1}, {P, INT32_MAX}, {P, INT32_MIN}, {-1, 1},
                   {INT32_MIN, 1}, {ALPHAMOE_MAX_EXPERTS + 1, 1}, {INT32_MAX, 1}, {INT32_MAX, INT32_MAX}};
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; ++j) {
            p.num_physical_experts = bad[j].P;
            p.replica_slots = bad[j].R;
            char what[96];
            snprintf(what, sizeof what, "redundant experts P %d R %d", bad[j].P, bad[j].R);
            expect_create_status(&p, ALPHAMOE_ERROR_REDUNDANT_EXPERTS, what);
        }
        p.num_physical_experts = P;
        p.replica_slots = R;
        alphamoe_router *r = expect_create_ok(&p, "redundant experts");
        alphamoe_params got;
        memset(&got, 0, sizeof got);
        got.struct_size = sizeof got;
        assert_int_equal(alphamoe_router_get_params(r, &got), ALPHAMOE_OK);
        assert_int_equal(got.local_expert_count, P); /* the plan covers all P physical experts */
        assert_int_equal(got.num_physical_experts, P);
        assert_int_equal(got.replica_slots, R);
        alphamoe_router_destroy(r);
        /* A range and a map are over P, not E. */
        p.local_expert_begin = P - 1;
        p.local_expert_count = 1;
        alphamoe_router_destroy(expect_create_ok(&p, "the last physical expert local"));
        const struct {
            int32_t begin, count;
        } ranges[] = {{P, 1}, {P - 1, 2}, {0, P + 1}, {1, P}, {INT32_MAX, 1}, {1, INT32_MAX}};
        for (size_t j = 0; j < sizeof ranges / sizeof ranges[0]; ++j) {
            p.local_expert_begin = ranges[j].begin;
            p.local_expert_count = ranges[j].count;
            expect_create_status(&p, ALPHAMOE_ERROR_EXPERT_PARALLEL, "a local range past the physical experts");
        }
        p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_begin = 0;
        p.local_expert_count = P;
        alphamoe_router_destroy(expect_create_ok(&p, "a map onto P local experts"));
        p.local_expert_count = P + 1;
        expect_create_status(&p, ALPHAMOE_ERROR_EXPERT_PARALLEL, "a map onto more than P local experts");
        /* Version 0.2's struct ends before both fields: no flag without them. */
        p.struct_size = offsetof(alphamoe_params, vocab_size);
        p.flags &= ~ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_count = 0;
        expect_create_status(&p, ALPHAMOE_ERROR_REDUNDANT_EXPERTS, "the flag in a version-0.2 struct");
        p.flags &= ~ALPHAMOE_FLAG_REDUNDANT_EXPERTS;
        alphamoe_router_destroy(expect_create_ok(&p, "a version-0.2 struct, fields past it ignored"));
    }
}

/* Shared-expert mode is defined with softmax scoring and no groups; the
 * other flavours combine with it. */
static void test_create_shared_with_flavours(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x1013);
    for (int i = 0; i < RANDOM_BASES; ++i) {
        const int32_t E = 2 + (int32_t)rng_below(&rng, ALPHAMOE_MAX_EXPERTS - 1);
        const int32_t k = 2 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16) - 1);
        alphamoe_params p = test_params(E, k, 16, 100, ALPHAMOE_FLAG_SHARED_EXPERT);
        p.scoring = ALPHAMOE_SCORING_SIGMOID;
        expect_create_status(&p, ALPHAMOE_ERROR_SHARED_EXPERT, "shared expert with sigmoid scoring");
        p.flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
        expect_create_status(&p, ALPHAMOE_ERROR_SHARED_EXPERT, "shared expert with biased sigmoid scoring");
        p.scoring = ALPHAMOE_SCORING_SQRT_SOFTPLUS;
        expect_create_status(&p, ALPHAMOE_ERROR_SHARED_EXPERT, "shared expert with biased sqrt-softplus scoring");
        p.flags &= ~ALPHAMOE_FLAG_CORRECTION_BIAS;
        expect_create_status(&p, ALPHAMOE_ERROR_SHARED_EXPERT, "shared expert with sqrt-softplus scoring");
        p = test_params(E, k, 16, 100, ALPHAMOE_FLAG_SHARED_EXPERT);
        int32_t g = 2;
        while (E % g) ++g;
        p.num_groups = g;
        p.topk_groups = g;
        expect_create_status(&p, ALPHAMOE_ERROR_SHARED_EXPERT, "shared expert with groups");
        p.num_groups = 1;
        p.topk_groups = 1;
        alphamoe_router_destroy(expect_create_ok(&p, "shared expert, one group"));
        p.flags |= ALPHAMOE_FLAG_NO_RENORMALIZE;
        p.routed_scaling_factor = 2.5f;
        p.logits_type = 1 + (int32_t)rng_below(&rng, 2);
        p.local_expert_count = 1 + (int32_t)rng_below(&rng, (uint32_t)E);
        p.local_expert_begin = (int32_t)rng_below(&rng, (uint32_t)(E - p.local_expert_count + 1));
        alphamoe_router_destroy(expect_create_ok(&p, "shared expert with the other flavours"));
    }
}

/* Several fields invalid at once: the status must be a failure naming one
 * of the fields that is actually wrong, and *out must stay untouched. */
enum {
    BAD_E, BAD_K, BAD_BM, BAD_MAX, BAD_SHARED, BAD_STRIDE, BAD_FLAGS, BAD_SPEC, BAD_SIZE,
    BAD_SCORING, BAD_TYPE, BAD_GROUPS, BAD_SCALE, BAD_EP, BAD_RESERVED, BAD_HASH, BAD_COUNT
};

static void test_create_combinations(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x100B);
    for (int iter = 0; iter < 4000; ++iter) {
        alphamoe_params p = random_valid_params(&rng);
        int bad[BAD_COUNT] = {0};
        int n_bad = 0;
        while (n_bad < 2) {
            for (int f = 0; f < BAD_COUNT; ++f)
                if (!bad[f] && rng_below(&rng, 3) == 0) {
                    bad[f] = 1;
                    ++n_bad;
                }
        }
        if (bad[BAD_E]) p.num_experts = rng_below(&rng, 2) ? 0 : ALPHAMOE_MAX_EXPERTS + 1 + (int32_t)rng_below(&rng, 1000);
        if (bad[BAD_SHARED]) {
            p.top_k = 1;
            p.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
        }
        if (bad[BAD_K]) p.top_k = rng_below(&rng, 2) ? 0 : ALPHAMOE_MAX_TOP_K + 1 + (int32_t)rng_below(&rng, 100);
        if (bad[BAD_BM]) p.block_m = rng_below(&rng, 2) ? 0 : 257;
        if (bad[BAD_MAX]) p.max_tokens = -1 - (int32_t)rng_below(&rng, 5);
        if (bad[BAD_STRIDE]) p.logits_row_stride = -1 - (int64_t)rng_below(&rng, 5);
        if (bad[BAD_FLAGS]) p.flags |= 0x100u << rng_below(&rng, 24);
        if (bad[BAD_SPEC]) p.force_specialization = rng_below(&rng, 2) ? -1 : 4;
        if (bad[BAD_SIZE]) {
            /* Not a published size: below the first, or inside a later field. */
            do p.struct_size = rng_below(&rng, (uint32_t)sizeof p);
            while (p.struct_size == offsetof(alphamoe_params, scoring) ||
                   p.struct_size == offsetof(alphamoe_params, vocab_size));
        }
        if (bad[BAD_SCORING]) p.scoring = rng_below(&rng, 2) ? -1 : 3 + (int32_t)rng_below(&rng, 100);
        if (bad[BAD_TYPE]) p.logits_type = rng_below(&rng, 2) ? -1 : 3 + (int32_t)rng_below(&rng, 100);
        if (bad[BAD_GROUPS]) {
            if (rng_below(&rng, 2)) p.num_groups = -1 - (int32_t)rng_below(&rng, 5);
            else p.topk_groups = -1;
        }
        if (bad[BAD_SCALE]) {
            const float bad_scales[] = {-1.0f, -1e-30f, INFINITY, -INFINITY, NAN};
            p.routed_scaling_factor = bad_scales[rng_below(&rng, 5)];
        }
        if (bad[BAD_EP]) p.local_expert_count = -1 - (int32_t)rng_below(&rng, 5);
        if (bad[BAD_RESERVED]) {
            if (rng_below(&rng, 2)) p.reserved = 1u + (uint32_t)rng_below(&rng, 1000);
            else p.reserved2 = 1u + (uint32_t)rng_below(&rng, 1000);
        }
        /* A vocabulary without the flag, or none with it. */
        if (bad[BAD_HASH]) {
            if (rng_below(&rng, 2))
                p.vocab_size = (p.flags & ALPHAMOE_FLAG_HASH_ROUTING) ? -(int32_t)rng_below(&rng, 1000)
                                                                     : 1 + (int32_t)rng_below(&rng, 1000);
            else if (!(p.flags & ALPHAMOE_FLAG_HASH_ROUTING)) p.flags |= ALPHAMOE_FLAG_HASH_ROUTING;
            else p.vocab_size = 0;
        }

        alphamoe_router *out = SENTINEL_ROUTER;
        const alphamoe_status s = alphamoe_router_create(&p, &out);
        char desc[384];
        describe_params(&p, desc, sizeof desc);
        if (out != SENTINEL_ROUTER) {
            if (s == ALPHAMOE_OK) alphamoe_router_destroy(out);
            fail_msg("combination (%s): *out changed, status %d", desc, (int)s);
        }
        /* A field's validity can hinge on an invalid neighbour (k against E,
         * the stride and capacity against E, k and max_tokens). */
        int ok_status = 0;
        switch (s) {
        case ALPHAMOE_ERROR_STRUCT_SIZE: ok_status = bad[BAD_SIZE]; break;
        case ALPHAMOE_ERROR_NUM_EXPERTS: ok_status = bad[BAD_E]; break;
        case ALPHAMOE_ERROR_TOP_K: ok_status = bad[BAD_K] || bad[BAD_E] || bad[BAD_SHARED]; break;
        case ALPHAMOE_ERROR_BLOCK_M: ok_status = bad[BAD_BM]; break;
        case ALPHAMOE_ERROR_MAX_TOKENS:
            ok_status = bad[BAD_MAX] || bad[BAD_E] || bad[BAD_K] || bad[BAD_BM];
            break;
        case ALPHAMOE_ERROR_SHARED_EXPERT: ok_status = bad[BAD_SHARED] || bad[BAD_K]; break;
        case ALPHAMOE_ERROR_ROW_STRIDE: ok_status = bad[BAD_STRIDE] || bad[BAD_E] || bad[BAD_MAX]; break;
        case ALPHAMOE_ERROR_FLAGS: ok_status = bad[BAD_FLAGS]; break;
        case ALPHAMOE_ERROR_SPECIALIZATION: ok_status = bad[BAD_SPEC]; break;
        case ALPHAMOE_ERROR_SCORING: ok_status = bad[BAD_SCORING]; break;
        case ALPHAMOE_ERROR_LOGITS_TYPE: ok_status = bad[BAD_TYPE]; break;
        case ALPHAMOE_ERROR_GROUPS: ok_status = bad[BAD_GROUPS]; break;
        case ALPHAMOE_ERROR_SCALING_FACTOR: ok_status = bad[BAD_SCALE]; break;
        case ALPHAMOE_ERROR_EXPERT_PARALLEL: ok_status = bad[BAD_EP]; break;
        case ALPHAMOE_ERROR_INVALID_ARGUMENT: ok_status = bad[BAD_RESERVED]; break;
        /* Hash routing also refuses the groups, bias or shared expert of a
         * valid base, which the flag made invalid. */
        case ALPHAMOE_ERROR_HASH_ROUTING: ok_status = bad[BAD_HASH]; break;
        default: ok_status = 0; break;
        }
        if (!ok_status)
            fail_msg("combination (%s): status %s names no invalid field", desc, alphamoe_status_string(s));
    }
}

/* get_params returns the parameters normalized: every "0 means ..." field
 * resolved. */
static void check_params_round_trip(const alphamoe_params *in, const alphamoe_router *r) {
    alphamoe_params got;
    memset(&got, 0xA5, sizeof got);
    got.struct_size = sizeof got;
    assert_int_equal(alphamoe_router_get_params(r, &got), ALPHAMOE_OK);
    assert_int_equal(got.struct_size, sizeof got);
    assert_int_equal(got.num_experts, in->num_experts);
    assert_int_equal(got.top_k, in->top_k);
    assert_int_equal(got.block_m, in->block_m);
    assert_int_equal(got.max_tokens, in->max_tokens);
    assert_int_equal(got.logits_row_stride, in->logits_row_stride ? in->logits_row_stride : in->num_experts);
    assert_int_equal(got.flags, in->flags);
    assert_int_equal(got.force_specialization, in->force_specialization);
    assert_int_equal(got.scoring, in->scoring);
    assert_int_equal(got.logits_type, in->logits_type);
    const int32_t groups = in->num_groups > 1 ? in->num_groups : 1;
    assert_int_equal(got.num_groups, groups);
    assert_int_equal(got.topk_groups, in->topk_groups ? in->topk_groups : groups);
    assert_true(got.routed_scaling_factor == (in->routed_scaling_factor == 0.0f ? 1.0f : in->routed_scaling_factor));
    assert_int_equal(got.local_expert_begin, in->local_expert_begin);
    const int32_t routed = (in->flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) ? in->num_physical_experts : in->num_experts;
    assert_int_equal(got.local_expert_count, in->local_expert_count ? in->local_expert_count : routed);
    assert_int_equal(got.reserved, 0);
    assert_int_equal(got.vocab_size, in->vocab_size);
    assert_int_equal(got.num_physical_experts, in->num_physical_experts);
    assert_int_equal(got.replica_slots, in->replica_slots);
    assert_int_equal(got.reserved2, 0);

    /* A caller of version 0.2 gets nothing past its reserved field. */
    alphamoe_params v2;
    memset(&v2, 0x5D, sizeof v2);
    v2.struct_size = offsetof(alphamoe_params, vocab_size);
    assert_int_equal(alphamoe_router_get_params(r, &v2), ALPHAMOE_OK);
    assert_int_equal(v2.struct_size, offsetof(alphamoe_params, vocab_size));
    assert_int_equal(v2.local_expert_count, got.local_expert_count);
    const unsigned char *past = (const unsigned char *)&v2 + offsetof(alphamoe_params, vocab_size);
    for (size_t i = 0; i < sizeof v2 - offsetof(alphamoe_params, vocab_size); ++i)
        if (past[i] != 0x5D) fail_msg("get_params wrote past a version-0.2 struct_size (byte %zu)", i);

    /* A first-version caller gets the first version's fields only. */
    alphamoe_params old;
    memset(&old, 0x5C, sizeof old);
    old.struct_size = offsetof(alphamoe_params, scoring);
    assert_int_equal(alphamoe_router_get_params(r, &old), ALPHAMOE_OK);
    assert_int_equal(old.struct_size, offsetof(alphamoe_params, scoring));
    assert_int_equal(old.force_specialization, in->force_specialization);
    const unsigned char *tail = (const unsigned char *)&old + offsetof(alphamoe_params, scoring);
    for (size_t i = 0; i < sizeof old - offsetof(alphamoe_params, scoring); ++i)
        if (tail[i] != 0x5C) fail_msg("get_params wrote past a first-version struct_size (byte %zu)", i);
}

static void test_create_valid_boundaries(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x100C);
    alphamoe_params cases[96];
    int n = 0;
    cases[n++] = test_params(1, 1, 1, 1, 0u);
    cases[n++] = test_params(512, 16, 256, 1000, 0u);
    cases[n++] = test_params(16, 16, 64, 100, 0u);
    cases[n++] = test_params(2, 2, 1, 10, 0u);
    cases[n++] = test_params(64, 8, 1, 4096, 0u);
    cases[n++] = test_params(64, 8, 256, 4096, 0u);
    cases[n++] = test_params(64, 8, 16, 0, 0u);
    cases[n++] = test_params(1, 1, 256, 0, 0u);
    cases[n++] = test_params(1, 1, 1, INT32_MAX, 0u); /* capacity exactly INT32_MAX */
    cases[n] = test_params(512, 16, 256, 77, 0u);
    cases[n++].logits_row_stride = 512;
    cases[n] = test_params(37, 5, 3, 77, 0u);
    cases[n++].logits_row_stride = 37;
    cases[n] = test_params(37, 5, 3, 77, 0u);
    cases[n++].logits_row_stride = 38;
    cases[n] = test_params(37, 5, 3, 77, 0u);
    cases[n++].logits_row_stride = 1 << 20;
    cases[n++] = test_params(2, 2, 8, 50, ALPHAMOE_FLAG_SHARED_EXPERT);
    cases[n++] = test_params(512, 16, 8, 50,
                             ALPHAMOE_FLAG_ALL & ~(ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_EXPERT_MAP |
                                                   ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_REDUNDANT_EXPERTS));
    cases[n] = test_params(384, 6, 64, 4096, ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_EXPERT_MAP);
    cases[n].scoring = ALPHAMOE_SCORING_SQRT_SOFTPLUS; /* DeepSeek-V4's hash layers, a map of 48 local experts */
    cases[n].vocab_size = 129280;
    cases[n].routed_scaling_factor = 1.5f;
    cases[n++].local_expert_count = 48;
    cases[n] = test_params(512, 16, 1, 1, ALPHAMOE_FLAG_HASH_ROUTING);
    cases[n++].vocab_size = INT32_MAX; /* the largest table */
    cases[n] = test_params(256, 8, 16, 4096,
                           ALPHAMOE_FLAG_ALL & ~(ALPHAMOE_FLAG_SHARED_EXPERT | ALPHAMOE_FLAG_HASH_ROUTING |
                                                 ALPHAMOE_FLAG_REDUNDANT_EXPERTS));
    cases[n].scoring = ALPHAMOE_SCORING_SIGMOID; /* DeepSeek-V3 with a map of 32 local experts */
    cases[n].num_groups = 8;
    cases[n].topk_groups = 4;
    cases[n].routed_scaling_factor = 2.5f;
    cases[n++].local_expert_count = 32;
    cases[n] = test_params(256, 8, 16, 4096, ALPHAMOE_FLAG_ALL & ~ALPHAMOE_FLAG_SHARED_EXPERT);
    cases[n].scoring = ALPHAMOE_SCORING_SIGMOID; /* DeepSeek-V3 with EPLB: 288 physical experts, a map of 36 */
    cases[n].num_groups = 8;
    cases[n].topk_groups = 4;
    cases[n].flags &= ~ALPHAMOE_FLAG_HASH_ROUTING;
    cases[n].num_physical_experts = 288;
    cases[n].replica_slots = 33;
    cases[n++].local_expert_count = 288;
    cases[n] = test_params(2048, 32, 1, 1, ALPHAMOE_FLAG_REDUNDANT_EXPERTS);
    cases[n].num_physical_experts = 2048; /* the most physical experts and replica slots */
    cases[n++].replica_slots = 2048;
    cases[n] = test_params(2048, 4, 1, 1, ALPHAMOE_FLAG_REDUNDANT_EXPERTS | ALPHAMOE_FLAG_SHARED_EXPERT);
    cases[n].num_physical_experts = 1; /* every logical expert on one physical expert */
    cases[n].replica_slots = 1;
    cases[n].local_expert_begin = 0;
    cases[n++].local_expert_count = 1;
    cases[n] = test_params(8, 2, 4, 100, ALPHAMOE_FLAG_REDUNDANT_EXPERTS | ALPHAMOE_FLAG_HASH_ROUTING);
    cases[n].vocab_size = 1000; /* a range past E, inside P */
    cases[n].num_physical_experts = 24;
    cases[n].replica_slots = 3;
    cases[n].local_expert_begin = 16;
    cases[n++].local_expert_count = 8;
    cases[n] = test_params(512, 16, 8, 50, 0u);
    cases[n].num_groups = 512; /* groups of one, all kept */
    cases[n++].logits_type = ALPHAMOE_LOGITS_F16;
    cases[n] = test_params(512, 16, 8, 50, 0u);
    cases[n].num_groups = 32; /* keep exactly k experts */
    cases[n++].topk_groups = 1;
    cases[n] = test_params(12, 5, 8, 50, 0u);
    cases[n].num_groups = 4;
    cases[n++].topk_groups = 2; /* 6 >= 5 */
    cases[n] = test_params(64, 8, 16, 100, 0u);
    cases[n].local_expert_begin = 63; /* the last expert alone */
    cases[n++].local_expert_count = 1;
    cases[n] = test_params(64, 8, 16, 100, 0u);
    cases[n++].local_expert_count = 64; /* all of them, as a range */
    cases[n] = test_params(64, 8, 16, 100, ALPHAMOE_FLAG_EXPERT_MAP);
    cases[n++].local_expert_count = 64;
    cases[n] = test_params(64, 8, 16, 100, 0u);
    cases[n++].routed_scaling_factor = 1.17549435e-38f; /* smallest normal */
    cases[n] = test_params(64, 8, 16, 100, 0u);
    cases[n++].routed_scaling_factor = bits_to_float(1u); /* a subnormal is finite and > 0 */
    cases[n] = test_params(64, 8, 16, 100, 0u);
    cases[n++].routed_scaling_factor = -0.0f; /* zero of either sign means 1 */
    for (int32_t s = ALPHAMOE_SPECIALIZATION_AUTO; s <= ALPHAMOE_SPECIALIZATION_LARGE; ++s) {
        cases[n] = test_params(8, 2, 16, 300, 0u);
        cases[n++].force_specialization = s;
    }
    while (n < 96) cases[n++] = random_valid_params(&rng);
    for (int i = 0; i < n; ++i) {
        alphamoe_router *r = expect_create_ok(&cases[i], "valid boundary");
        check_params_round_trip(&cases[i], r);
        alphamoe_router_destroy(r);
    }
    alphamoe_router_destroy(NULL);
}

static void test_get_params(void **state) {
    (void)state;
    alphamoe_params in = test_params(60, 4, 32, 123, ALPHAMOE_FLAG_TAIL_FILL | ALPHAMOE_FLAG_SHARED_EXPERT);
    in.force_specialization = ALPHAMOE_SPECIALIZATION_SMALL;
    alphamoe_router *r = expect_create_ok(&in, "get_params router");
    check_params_round_trip(&in, r);

    alphamoe_params got;
    memset(&got, 0x3C, sizeof got);
    got.struct_size = sizeof got - 1;
    alphamoe_params before = got;
    assert_int_equal(alphamoe_router_get_params(r, &got), ALPHAMOE_ERROR_STRUCT_SIZE);
    assert_memory_equal(&got, &before, sizeof got);
    got.struct_size = sizeof got;
    before = got;
    assert_int_equal(alphamoe_router_get_params(NULL, &got), ALPHAMOE_ERROR_NULL_POINTER);
    assert_memory_equal(&got, &before, sizeof got);
    assert_int_equal(alphamoe_router_get_params(r, NULL), ALPHAMOE_ERROR_NULL_POINTER);
    alphamoe_router_destroy(r);
}

/* ------------------------------------------------------------ routing */

enum { PATH_HOST, PATH_DEVICE };

static const char *path_name(int path) { return path == PATH_HOST ? "alphamoe_route_host" : "alphamoe_route"; }

#define REGION_COUNT 13

typedef struct fixture {
    alphamoe_router *router;
    alphamoe_params params;
    host_plan plan;
    float *logits;
    size_t logits_bytes;
    unsigned char *workspace_raw; /* the allocation; the workspace starts 64-aligned inside it */
    unsigned char *workspace;
    size_t workspace_raw_bytes;
    float *bias;   /* [E], passed whatever the flags */
    int32_t *map;  /* [E] */
    int32_t *token_ids;  /* [max_tokens], ids in and out of the vocabulary */
    int32_t *table;      /* [vocab_size, k] (one row without hash routing), junk entries included */
    int32_t *replica_count;       /* [E], junk counts included */
    int32_t *logical_to_physical; /* [E, R] (R 1 without redundant experts), junk ids included */
    int32_t *load;                /* [P] (one without redundant experts): an output */
    alphamoe_buffers valid; /* a complete, valid buffer set */
    const void *region[REGION_COUNT];
    size_t region_bytes[REGION_COUNT];
    unsigned char *snapshot[REGION_COUNT];
} fixture;

static size_t guarded_bytes(int64_t elements) { return (size_t)(elements + TEST_GUARD) * 4u; }

static void fixture_snapshot(fixture *fx) {
    for (int i = 0; i < REGION_COUNT; ++i)
        if (fx->region[i]) memcpy(fx->snapshot[i], fx->region[i], fx->region_bytes[i]);
}

static void fixture_init(fixture *fx, test_rng *rng) {
    memset(fx, 0, sizeof *fx);
    const int32_t E = 1 + (int32_t)rng_below(rng, 300);
    const int32_t k = 1 + (int32_t)rng_below(rng, (uint32_t)min_i32(E, 16));
    alphamoe_params p = test_params(E, k, 1 + (int32_t)rng_below(rng, 256), 1 + (int32_t)rng_below(rng, 64), 0u);
    p.logits_row_stride = rng_below(rng, 2) ? 0 : E + (int64_t)rng_below(rng, 9);
    p.flags = rng_below(rng, 2) ? ALPHAMOE_FLAG_TAIL_FILL : 0u;
    if (rng_below(rng, 2)) p.flags |= ALPHAMOE_FLAG_PDL;
    if (k >= 2 && rng_below(rng, 2)) p.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
    p.force_specialization = (int32_t)rng_below(rng, 4);
    if (rng_below(rng, 3)) draw_valid_flavour(rng, &p);
    /* Hash routing where nothing rules it out. */
    if (!(p.flags & (ALPHAMOE_FLAG_SHARED_EXPERT | ALPHAMOE_FLAG_CORRECTION_BIAS)) && p.num_groups <= 1 &&
        rng_below(rng, 4) == 0) {
        p.flags |= ALPHAMOE_FLAG_HASH_ROUTING;
        p.vocab_size = 1 + (int32_t)rng_below(rng, 300);
    }
    /* Redundant experts over at least E physical experts, so that the
     * expert parallelism drawn over E stays valid over P. */
    if (rng_below(rng, 4) == 0) {
        p.flags |= ALPHAMOE_FLAG_REDUNDANT_EXPERTS;
        p.num_physical_experts = E + (int32_t)rng_below(rng, 40);
        p.replica_slots = 1 + (int32_t)rng_below(rng, (uint32_t)min_i32(p.num_physical_experts, 5));
    }
    const int32_t P = p.num_physical_experts > E ? p.num_physical_experts : E;
    fx->router = expect_create_ok(&p, "fixture router");
    fx->params = p;
    if (host_plan_alloc(&fx->plan, fx->router, 1) != 0) fail_msg("host_plan_alloc failed");
    host_plan_poison(&fx->plan);

    const int64_t stride = p.logits_row_stride ? p.logits_row_stride : E;
    fx->logits_bytes = (size_t)(stride * p.max_tokens) * 4u + 256u;
    fx->logits = malloc(fx->logits_bytes);
    assert_non_null(fx->logits);
    memset(fx->logits, 0x77, fx->logits_bytes);
    fill_logits(rng, fx->logits, p.max_tokens, E, stride, LOGITS_RANDOM, 0);

    const alphamoe_sizes *z = &fx->plan.sizes;
    assert_true(z->workspace_alignment >= 16 && z->workspace_alignment <= 4096);
    const size_t align = (size_t)z->workspace_alignment > 64 ? (size_t)z->workspace_alignment : 64;
    fx->workspace_raw_bytes = (size_t)z->workspace.bytes + 2 * align;
    fx->workspace_raw = malloc(fx->workspace_raw_bytes);
    assert_non_null(fx->workspace_raw);
    for (size_t i = 0; i < fx->workspace_raw_bytes; ++i) fx->workspace_raw[i] = (unsigned char)(0xC3 ^ i);
    fx->workspace = fx->workspace_raw + (align - (uintptr_t)fx->workspace_raw % align) % align;

    fx->bias = malloc((size_t)E * sizeof *fx->bias);
    fx->map = malloc((size_t)P * sizeof *fx->map);
    assert_true(fx->bias && fx->map);
    for (int32_t e = 0; e < E; ++e) fx->bias[e] = rng_uniform(rng, -1.0f, 1.0f);
    for (int32_t e = 0; e < P; ++e) fx->map[e] = (int32_t)rng_below(rng, (uint32_t)P + 2) - 1; /* junk: -1 */
    const int32_t R = p.replica_slots > 0 ? p.replica_slots : 1;
    fx->replica_count = malloc((size_t)E * sizeof *fx->replica_count);
    fx->logical_to_physical = malloc((size_t)E * (size_t)R * sizeof *fx->logical_to_physical);
    fx->load = malloc((size_t)P * sizeof *fx->load);
    assert_true(fx->replica_count && fx->logical_to_physical && fx->load);
    for (int32_t e = 0; e < E; ++e) fx->replica_count[e] = (int32_t)rng_below(rng, (uint32_t)R + 2);
    for (int64_t i = 0; i < (int64_t)E * R; ++i)
        fx->logical_to_physical[i] = (int32_t)rng_below(rng, (uint32_t)P + 2) - 1;
    for (int32_t q = 0; q < P; ++q) fx->load[q] = (int32_t)rng_below(rng, 1000);

    fx->valid = fx->plan.buffers;
    fx->valid.workspace = fx->workspace;
    fx->valid.workspace_bytes = (size_t)z->workspace.bytes;
    fx->valid.correction_bias = fx->bias;
    fx->valid.expert_map = fx->map;

    const int32_t vocab = p.vocab_size > 0 ? p.vocab_size : 1;
    fx->token_ids = malloc((size_t)p.max_tokens * sizeof *fx->token_ids);
    fx->table = malloc((size_t)vocab * (size_t)k * sizeof *fx->table);
    assert_true(fx->token_ids && fx->table);
    for (int32_t t = 0; t < p.max_tokens; ++t) fx->token_ids[t] = (int32_t)rng_below(rng, (uint32_t)vocab + 2) - 1;
    for (int64_t i = 0; i < (int64_t)vocab * k; ++i) fx->table[i] = (int32_t)rng_below(rng, (uint32_t)E + 2) - 1;
    fx->valid.token_ids = fx->token_ids;
    fx->valid.hash_table = fx->table;
    fx->valid.replica_count = fx->replica_count;
    fx->valid.logical_to_physical = fx->logical_to_physical;
    fx->valid.physical_load = fx->load;

    const host_plan *pl = &fx->plan;
    fx->region[0] = pl->topk_ids;               fx->region_bytes[0] = guarded_bytes(z->topk_ids.elements);
    fx->region[1] = pl->topk_weights;           fx->region_bytes[1] = guarded_bytes(z->topk_weights.elements);
    fx->region[2] = pl->sorted_token_ids;       fx->region_bytes[2] = guarded_bytes(z->sorted_token_ids.elements);
    fx->region[3] = pl->expert_ids;             fx->region_bytes[3] = guarded_bytes(z->expert_ids.elements);
    fx->region[4] = pl->num_tokens_post_padded; fx->region_bytes[4] = guarded_bytes(1);
    fx->region[5] = pl->expert_counts;          fx->region_bytes[5] = guarded_bytes(z->expert_counts.elements);
    fx->region[6] = pl->expert_offsets;         fx->region_bytes[6] = guarded_bytes(z->expert_offsets.elements);
    fx->region[7] = pl->pair_to_sorted;         fx->region_bytes[7] = guarded_bytes(z->pair_to_sorted.elements);
    fx->region[8] = fx->logits;                 fx->region_bytes[8] = fx->logits_bytes;
    fx->region[9] = fx->workspace_raw;          fx->region_bytes[9] = fx->workspace_raw_bytes;
    fx->region[10] = fx->bias;                  fx->region_bytes[10] = (size_t)E * sizeof *fx->bias;
    fx->region[11] = fx->map;                   fx->region_bytes[11] = (size_t)P * sizeof *fx->map;
    fx->region[12] = fx->load;                  fx->region_bytes[12] = (size_t)P * sizeof *fx->load;
    for (int i = 0; i < REGION_COUNT; ++i) {
        fx->snapshot[i] = malloc(fx->region_bytes[i]);
        assert_non_null(fx->snapshot[i]);
    }
    fixture_snapshot(fx);
}

static void fixture_free(fixture *fx) {
    for (int i = 0; i < REGION_COUNT; ++i) free(fx->snapshot[i]);
    free(fx->workspace_raw);
    free(fx->logits);
    free(fx->bias);
    free(fx->map);
    free(fx->token_ids);
    free(fx->table);
    free(fx->replica_count);
    free(fx->logical_to_physical);
    free(fx->load);
    host_plan_free(&fx->plan);
    alphamoe_router_destroy(fx->router);
    memset(fx, 0, sizeof *fx);
}

static const char *const region_names[REGION_COUNT] = {
    "topk_ids", "topk_weights", "sorted_token_ids", "expert_ids", "num_tokens_post_padded",
    "expert_counts", "expert_offsets", "pair_to_sorted", "logits", "workspace", "correction_bias", "expert_map",
    "physical_load"};

static void fixture_expect_untouched(const fixture *fx, const char *what) {
    for (int i = 0; i < REGION_COUNT; ++i) {
        if (memcmp(fx->region[i], fx->snapshot[i], fx->region_bytes[i]) != 0) {
            size_t at = 0;
            const unsigned char *a = fx->region[i];
            while (a[at] == fx->snapshot[i][at]) ++at;
            fail_msg("%s: %s byte %zu changed by a rejected call", what, region_names[i], at);
        }
    }
}

static alphamoe_status route_call(int path, const alphamoe_router *r, int32_t M, const void *logits,
                                  const alphamoe_buffers *b) {
    return path == PATH_HOST ? alphamoe_route_host(r, M, logits, b) : alphamoe_route(r, M, logits, b, NULL);
}

static void expect_reject(const fixture *fx, int path, const alphamoe_router *r, int32_t M,
                          const void *logits, const alphamoe_buffers *b, alphamoe_status want,
                          const char *what) {
    alphamoe_buffers before;
    if (b) before = *b;
    const alphamoe_status s = route_call(path, r, M, logits, b);
    char desc[640];
    char pd[384];
    describe_params(&fx->params, pd, sizeof pd);
    snprintf(desc, sizeof desc, "%s, %s, M=%d, router %s", path_name(path), what, M, pd);
    if (s != want)
        fail_msg("%s: expected %s, got %s", desc, alphamoe_status_string(want), alphamoe_status_string(s));
    if (b) assert_memory_equal(b, &before, sizeof before);
    fixture_expect_untouched(fx, desc);
}

static void *misalign(void *p, size_t by) { return p ? (void *)((char *)p + by) : NULL; }

static void run_rejections(fixture *fx, int path, test_rng *rng) {
    const alphamoe_router *r = fx->router;
    const int32_t maxt = fx->params.max_tokens;
    const int32_t M = 1 + (int32_t)rng_below(rng, (uint32_t)maxt);
    const int32_t Ms[2] = {M, 0};
    const float *lg = fx->logits;
    alphamoe_buffers b;

    expect_reject(fx, path, NULL, M, lg, &fx->valid, ALPHAMOE_ERROR_NULL_POINTER, "router NULL");
    expect_reject(fx, path, r, M, lg, NULL, ALPHAMOE_ERROR_NULL_POINTER, "buffers NULL");
    const size_t v1 = offsetof(alphamoe_buffers, correction_bias);
    const size_t small_sizes[] = {0, 1, 8, v1 - 8, v1 - 1, v1 + 1, v1 + 4, sizeof b - 8, sizeof b - 1};
    for (size_t i = 0; i < sizeof small_sizes / sizeof small_sizes[0]; ++i) {
        b = fx->valid;
        b.struct_size = small_sizes[i];
        expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_STRUCT_SIZE, "buffers struct_size too small");
    }

    const int32_t bad_m[] = {-1, INT32_MIN, maxt + 1, maxt + 1 + (int32_t)rng_below(rng, 1000), INT32_MAX};
    for (size_t i = 0; i < sizeof bad_m / sizeof bad_m[0]; ++i)
        expect_reject(fx, path, r, bad_m[i], lg, &fx->valid, ALPHAMOE_ERROR_NUM_TOKENS, "num_tokens out of range");

    /* Token-shaped pointers are required only when there are tokens. */
    expect_reject(fx, path, r, M, NULL, &fx->valid, ALPHAMOE_ERROR_NULL_POINTER, "logits NULL");
    b = fx->valid;
    b.topk_ids = NULL;
    expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, "topk_ids NULL");
    b = fx->valid;
    b.topk_weights = NULL;
    expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, "topk_weights NULL");

    /* The per-expert inputs a flag asks for: required with tokens, word
     * aligned; a first-version buffers struct has neither, a version-0.2
     * one no hash table. */
    const uint32_t flags = fx->params.flags;
    /* Version 0.3's inputs: a version-0.2 struct lacks them all. Each
     * pointer field is named by its offset; physical_load is optional
     * (never NULL-checked) but word aligned. */
    const struct {
        uint32_t flag;
        size_t field;
        const void *valid;
        int required;
        const char *name;
    } inputs[] = {{ALPHAMOE_FLAG_HASH_ROUTING, offsetof(alphamoe_buffers, token_ids), fx->token_ids, 1, "token_ids"},
                  {ALPHAMOE_FLAG_HASH_ROUTING, offsetof(alphamoe_buffers, hash_table), fx->table, 1, "hash_table"},
                  {ALPHAMOE_FLAG_REDUNDANT_EXPERTS, offsetof(alphamoe_buffers, logical_to_physical),
                   fx->logical_to_physical, 1, "logical_to_physical"},
                  {ALPHAMOE_FLAG_REDUNDANT_EXPERTS, offsetof(alphamoe_buffers, replica_count), fx->replica_count, 1,
                   "replica_count"},
                  {ALPHAMOE_FLAG_REDUNDANT_EXPERTS, offsetof(alphamoe_buffers, physical_load), fx->load, 0,
                   "physical_load"}};
    if (flags & (ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_REDUNDANT_EXPERTS)) {
        b = fx->valid;
        b.struct_size = offsetof(alphamoe_buffers, token_ids);
        expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, "version-0.2 buffers with a 0.3 flag");
    }
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i) {
        if (!(flags & inputs[i].flag)) continue;
        char what[96];
        const void *ptr = NULL;
        if (inputs[i].required) {
            b = fx->valid;
            memcpy((char *)&b + inputs[i].field, &ptr, sizeof ptr);
            snprintf(what, sizeof what, "%s NULL", inputs[i].name);
            expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, what);
        }
        for (size_t by = 1; by <= 3; ++by) {
            b = fx->valid;
            ptr = misalign((void *)(uintptr_t)inputs[i].valid, by);
            memcpy((char *)&b + inputs[i].field, &ptr, sizeof ptr);
            snprintf(what, sizeof what, "%s misaligned", inputs[i].name);
            expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_ALIGNMENT, what);
        }
    }
    if (flags & (ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_EXPERT_MAP)) {
        b = fx->valid;
        b.struct_size = offsetof(alphamoe_buffers, correction_bias);
        expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_NULL_POINTER,
                      "first-version buffers with a per-expert input flag");
    }
    if (flags & ALPHAMOE_FLAG_CORRECTION_BIAS) {
        b = fx->valid;
        b.correction_bias = NULL;
        expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, "correction_bias NULL");
        for (size_t by = 1; by <= 3; ++by) {
            b = fx->valid;
            b.correction_bias = misalign(fx->bias, by);
            expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_ALIGNMENT, "correction_bias misaligned");
        }
    }
    if (flags & ALPHAMOE_FLAG_EXPERT_MAP) {
        b = fx->valid;
        b.expert_map = NULL;
        expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, "expert_map NULL");
        for (size_t by = 1; by <= 3; ++by) {
            b = fx->valid;
            b.expert_map = misalign(fx->map, by);
            expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_ALIGNMENT, "expert_map misaligned");
        }
    }

    for (int mi = 0; mi < 2; ++mi) {
        const int32_t m = Ms[mi];
        b = fx->valid;
        b.sorted_token_ids = NULL;
        expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, "sorted_token_ids NULL");
        b = fx->valid;
        b.expert_ids = NULL;
        expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, "expert_ids NULL");
        b = fx->valid;
        b.num_tokens_post_padded = NULL;
        expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, "num_tokens_post_padded NULL");
        if (path == PATH_DEVICE) {
            b = fx->valid;
            b.workspace = NULL;
            expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_NULL_POINTER, "workspace NULL");
        }
    }

    /* Every buffer, optional ones included, must be 4-byte aligned. */
    const size_t logit_size = logits_type_bytes_of(&fx->params);
    for (size_t by = 1; by <= 3; ++by) {
        if (by % logit_size != 0)
            expect_reject(fx, path, r, M, misalign((void *)lg, by), &fx->valid, ALPHAMOE_ERROR_ALIGNMENT,
                          "logits not aligned to their element size");
        int32_t **i32_fields[] = {&b.topk_ids, &b.sorted_token_ids, &b.expert_ids, &b.num_tokens_post_padded,
                                  &b.expert_counts, &b.expert_offsets, &b.pair_to_sorted};
        static const char *const i32_names[] = {"topk_ids", "sorted_token_ids", "expert_ids",
                                                "num_tokens_post_padded", "expert_counts",
                                                "expert_offsets", "pair_to_sorted"};
        for (size_t f = 0; f < sizeof i32_fields / sizeof i32_fields[0]; ++f) {
            b = fx->valid;
            *i32_fields[f] = misalign(*i32_fields[f], by);
            char what[96];
            snprintf(what, sizeof what, "%s misaligned by %zu", i32_names[f], by);
            expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_ALIGNMENT, what);
        }
        b = fx->valid;
        b.topk_weights = misalign(b.topk_weights, by);
        expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_ALIGNMENT, "topk_weights misaligned");
    }
    /* num_tokens_post_padded is written even for an empty batch. */
    b = fx->valid;
    b.num_tokens_post_padded = misalign(b.num_tokens_post_padded, 2);
    expect_reject(fx, path, r, 0, lg, &b, ALPHAMOE_ERROR_ALIGNMENT, "num_tokens_post_padded misaligned, M=0");

    if (path == PATH_DEVICE) {
        const size_t offs[] = {1, 2, 4, 8, 12};
        for (size_t i = 0; i < sizeof offs / sizeof offs[0]; ++i) {
            b = fx->valid;
            b.workspace = misalign(b.workspace, offs[i]);
            char what[64];
            snprintf(what, sizeof what, "workspace misaligned by %zu", offs[i]);
            expect_reject(fx, path, r, M, lg, &b, ALPHAMOE_ERROR_ALIGNMENT, what);
        }
    }

    const alphamoe_sizes *z = &fx->plan.sizes;
    for (int mi = 0; mi < 2; ++mi) {
        const int32_t m = Ms[mi];
        b = fx->valid;
        b.sorted_token_ids_capacity = z->sorted_token_ids.elements - 1;
        expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_CAPACITY, "sorted_token_ids_capacity one short");
        b = fx->valid;
        b.expert_ids_capacity = z->expert_ids.elements - 1;
        expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_CAPACITY, "expert_ids_capacity one short");
        b = fx->valid;
        b.sorted_token_ids_capacity = -1;
        expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_CAPACITY, "sorted_token_ids_capacity -1");
        b = fx->valid;
        b.expert_ids_capacity = INT64_MIN;
        expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_CAPACITY, "expert_ids_capacity INT64_MIN");
        if (path == PATH_DEVICE) {
            b = fx->valid;
            b.workspace_bytes = (size_t)z->workspace.bytes - 1;
            expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_WORKSPACE, "workspace_bytes one short");
            b = fx->valid;
            b.workspace_bytes = 0;
            expect_reject(fx, path, r, m, lg, &b, ALPHAMOE_ERROR_WORKSPACE, "workspace_bytes 0");
        }
    }
}

static void test_route_host_rejects(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x2001);
    for (int i = 0; i < 60; ++i) {
        fixture fx;
        fixture_init(&fx, &rng);
        run_rejections(&fx, PATH_HOST, &rng);
        /* The same fixture is accepted as a whole: each rejection above was
         * caused by its one change. */
        const int32_t M = (int32_t)rng_below(&rng, (uint32_t)fx.params.max_tokens + 1);
        alphamoe_buffers b = fx.valid;
        /* Per-expert inputs no flag asks for are never read. */
        if (!(fx.params.flags & ALPHAMOE_FLAG_CORRECTION_BIAS)) b.correction_bias = (const float *)(uintptr_t)3;
        if (!(fx.params.flags & ALPHAMOE_FLAG_EXPERT_MAP)) b.expert_map = (const int32_t *)(uintptr_t)5;
        if (!(fx.params.flags & ALPHAMOE_FLAG_HASH_ROUTING)) {
            b.token_ids = (const int32_t *)(uintptr_t)7;
            b.hash_table = (const int32_t *)(uintptr_t)9;
        }
        if (!(fx.params.flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS)) {
            b.logical_to_physical = (const int32_t *)(uintptr_t)11;
            b.replica_count = (const int32_t *)(uintptr_t)13;
            b.physical_load = (int32_t *)(uintptr_t)15;
        }
        assert_int_equal(alphamoe_route_host(fx.router, M, fx.logits, &b), ALPHAMOE_OK);
        fx.plan.buffers.expert_map = fx.map;
        char why[256];
        if (validate_plan(&fx.plan, M, why, sizeof why) != 0) fail_msg("fixture route: %s", why);
        fixture_free(&fx);
    }
}

static void test_route_device_rejects(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x2002);
    int unsupported = 0;
    for (int i = 0; i < 60; ++i) {
        fixture fx;
        fixture_init(&fx, &rng);
        run_rejections(&fx, PATH_DEVICE, &rng);
        /* A flavour the kernels do not implement is refused after the
         * argument checks, before anything is read or written, whatever
         * the machine has; alphamoe_router_select says so the same way. */
        alphamoe_device_attributes d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.compute_capability = 90;
        d.multiprocessor_count = 132;
        d.cooperative_ctas_per_sm = 1;
        d.cooperative_launch = 1;
        alphamoe_selection sel;
        memset(&sel, 0, sizeof sel);
        sel.struct_size = sizeof sel;
        const int32_t M = (int32_t)rng_below(&rng, (uint32_t)fx.params.max_tokens + 1);
        if (alphamoe_router_select(fx.router, M, &d, &sel) == ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR) {
            expect_reject(&fx, PATH_DEVICE, fx.router, M, fx.logits, &fx.valid, ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR,
                          "a flavour the kernels do not implement");
            ++unsupported;
        }
        fixture_free(&fx);
    }
    print_message("# %d of 60 fixtures were flavours the kernels refuse\n", unsupported);
}

/* Each flavour dimension alone, on an otherwise first-version router:
 * alphamoe_router_select and alphamoe_route agree on whether the kernels
 * implement it, and the first version's flavour is always implemented. */
static void test_unsupported_flavour_status(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x2005);
    alphamoe_device_attributes d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.compute_capability = 90;
    d.multiprocessor_count = 132;
    d.cooperative_ctas_per_sm = 1;
    d.cooperative_launch = 1;
    /* The kernels run every valid flavour but more than kMaxGpuGroups (32)
     * groups (the grouped selection keeps one group score per lane). */
    enum { VARIANTS = 16 };
    static const char *const names[VARIANTS] = {"first version", "no renormalization", "sigmoid", "sigmoid + bias",
                                                "groups", "scaling factor", "bf16 logits", "fp16 logits",
                                                "local range", "expert map", "32 groups", "33 groups",
                                                "64 groups", "sqrt-softplus + bias", "hash routing",
                                                "redundant experts"};
    for (int v = 0; v < VARIANTS; ++v) {
        alphamoe_params p = test_params(v == 11 ? 66 : 64, 4, 16, 100, 0u);
        switch (v) {
        case 1: p.flags |= ALPHAMOE_FLAG_NO_RENORMALIZE; break;
        case 2: p.scoring = ALPHAMOE_SCORING_SIGMOID; break;
        case 3:
            p.scoring = ALPHAMOE_SCORING_SIGMOID;
            p.flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
            break;
        case 4: p.num_groups = 8; p.topk_groups = 2; break;
        case 5: p.routed_scaling_factor = 2.5f; break;
        case 6: p.logits_type = ALPHAMOE_LOGITS_BF16; break;
        case 7: p.logits_type = ALPHAMOE_LOGITS_F16; break;
        case 8: p.local_expert_begin = 16; p.local_expert_count = 16; break;
        case 9: p.flags |= ALPHAMOE_FLAG_EXPERT_MAP; p.local_expert_count = 16; break;
        case 10: p.num_groups = 32; p.topk_groups = 2; break;
        case 11: p.num_groups = 33; p.topk_groups = 2; break;
        case 12: p.num_groups = 64; p.topk_groups = 4; break;
        case 13:
            p.scoring = ALPHAMOE_SCORING_SQRT_SOFTPLUS;
            p.flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
            break;
        case 14:
            p.scoring = ALPHAMOE_SCORING_SQRT_SOFTPLUS;
            p.flags |= ALPHAMOE_FLAG_HASH_ROUTING;
            p.vocab_size = 100;
            break;
        case 15:
            p.flags |= ALPHAMOE_FLAG_REDUNDANT_EXPERTS;
            p.num_physical_experts = 72;
            p.replica_slots = 2;
            break;
        default: break;
        }
        const int supported = p.num_groups <= 32;
        alphamoe_router *r = expect_create_ok(&p, names[v]);
        alphamoe_selection sel;
        memset(&sel, 0x6B, sizeof sel);
        sel.struct_size = sizeof sel;
        const alphamoe_selection before = sel;
        const alphamoe_status st = alphamoe_router_select(r, 50, &d, &sel);
        if (st != (supported ? ALPHAMOE_OK : ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR))
            fail_msg("%s: select says %s, the kernels %s it", names[v], alphamoe_status_string(st),
                     supported ? "implement" : "do not implement");
        if (st != ALPHAMOE_OK) {
            if (memcmp(&sel, &before, sizeof sel) != 0) fail_msg("%s: selection written on refusal", names[v]);
            host_plan plan;
            assert_int_equal(host_plan_alloc(&plan, r, 1), 0);
            host_plan_poison(&plan);
            host_plan untouched;
            assert_int_equal(host_plan_alloc(&untouched, r, 1), 0);
            host_plan_poison(&untouched);
            float logits[66 * 50];
            float bias[66] = {0};
            int32_t map[66];
            for (int32_t e = 0; e < 66; ++e) map[e] = e < 16 ? e : -1;
            fill_logits(&rng, logits, 50, p.num_experts, p.num_experts, LOGITS_RANDOM, 0);
            alphamoe_buffers b = plan.buffers;
            const size_t workspace_bytes = ((size_t)plan.sizes.workspace.bytes + 63) / 64 * 64;
            unsigned char *workspace = aligned_alloc(64, workspace_bytes);
            assert_non_null(workspace);
            memset(workspace, 0, workspace_bytes);
            b.workspace = workspace;
            b.workspace_bytes = (size_t)plan.sizes.workspace.bytes;
            b.correction_bias = bias;
            b.expert_map = map;
            int32_t token_ids[50], table[100 * 4];
            for (int32_t t = 0; t < 50; ++t) token_ids[t] = t;
            for (int32_t i = 0; i < 100 * 4; ++i) table[i] = i % 64;
            b.token_ids = token_ids;
            b.hash_table = table;
            int32_t replica_count[66], logical_to_physical[66 * 2], load[72] = {0};
            for (int32_t e = 0; e < 66; ++e) {
                replica_count[e] = 1 + e % 2;
                logical_to_physical[2 * e] = e;
                logical_to_physical[2 * e + 1] = 66 + e % 6;
            }
            b.replica_count = replica_count;
            b.logical_to_physical = logical_to_physical;
            b.physical_load = load;
            for (int32_t M = 0; M <= 50; M += 50) {
                const alphamoe_status rs = alphamoe_route(r, M, logits, &b, NULL);
                if (rs != ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR)
                    fail_msg("%s, M=%d: select refuses the flavour, alphamoe_route says %s", names[v], M,
                             alphamoe_status_string(rs));
                const alphamoe_sizes *z = &plan.sizes;
                const struct {
                    const void *a, *b;
                    int64_t n;
                } arrays[] = {{plan.topk_ids, untouched.topk_ids, z->topk_ids.elements},
                              {plan.topk_weights, untouched.topk_weights, z->topk_weights.elements},
                              {plan.sorted_token_ids, untouched.sorted_token_ids, z->sorted_token_ids.elements},
                              {plan.expert_ids, untouched.expert_ids, z->expert_ids.elements},
                              {plan.num_tokens_post_padded, untouched.num_tokens_post_padded, 1},
                              {plan.expert_counts, untouched.expert_counts, z->expert_counts.elements},
                              {plan.expert_offsets, untouched.expert_offsets, z->expert_offsets.elements},
                              {plan.pair_to_sorted, untouched.pair_to_sorted, z->pair_to_sorted.elements}};
                for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; ++i)
                    if (memcmp(arrays[i].a, arrays[i].b, (size_t)(arrays[i].n + TEST_GUARD) * 4u) != 0)
                        fail_msg("%s, M=%d: the refused call wrote output array %zu", names[v], M, i);
                for (int32_t q = 0; q < 72; ++q)
                    if (load[q] != 0) fail_msg("%s, M=%d: the refused call wrote physical_load", names[v], M);
            }
            for (size_t i = 0; i < workspace_bytes; ++i)
                if (workspace[i]) fail_msg("%s: refused call wrote the workspace", names[v]);
            free(workspace);
            host_plan_free(&plan);
            host_plan_free(&untouched);
        }
        print_message("# %-20s %s\n", names[v], st == ALPHAMOE_OK ? "implemented by the kernels" : "host reference only");
        alphamoe_router_destroy(r);
    }
    /* Random valid parameter sets of every field: the same rule. */
    int refused = 0;
    for (int i = 0; i < 3000; ++i) {
        alphamoe_params p = random_valid_params(&rng);
        alphamoe_router *r = expect_create_ok(&p, "random valid parameters");
        alphamoe_params normalized;
        memset(&normalized, 0, sizeof normalized);
        normalized.struct_size = sizeof normalized;
        assert_int_equal(alphamoe_router_get_params(r, &normalized), ALPHAMOE_OK);
        const int supported = normalized.num_groups <= 32;
        alphamoe_selection sel;
        memset(&sel, 0, sizeof sel);
        sel.struct_size = sizeof sel;
        const int32_t M = min_i32(p.max_tokens, (int32_t)rng_below(&rng, 300));
        const alphamoe_status st = alphamoe_router_select(r, M, &d, &sel);
        if (st != (supported ? ALPHAMOE_OK : ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR)) {
            char desc[384];
            describe_params(&p, desc, sizeof desc);
            fail_msg("%s, M=%d: select says %s", desc, M, alphamoe_status_string(st));
        }
        refused += !supported;
        alphamoe_router_destroy(r);
    }
    print_message("# 3000 random valid parameter sets: %d with more than 32 groups refused, the rest selected\n",
                  refused);
}

/* Reading freed memory is what AddressSanitizer reports, so a destroyed
 * router is tried only without it. */
#if defined(__SANITIZE_ADDRESS__)
#define ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ADDRESS_SANITIZER 1
#endif
#endif

/* Every entry point that takes a router, given `r`, which is not a live
 * router: ALPHAMOE_ERROR_INVALID_HANDLE and nothing written (the fixture's
 * buffers, the output structs). */
static void expect_invalid_handle(fixture *fx, const alphamoe_router *r, const char *what) {
    char desc[128];
    snprintf(desc, sizeof desc, "%s: route_host", what);
    expect_reject(fx, PATH_HOST, r, 1, fx->logits, &fx->valid, ALPHAMOE_ERROR_INVALID_HANDLE, desc);
    snprintf(desc, sizeof desc, "%s: route", what);
    expect_reject(fx, PATH_DEVICE, r, 1, fx->logits, &fx->valid, ALPHAMOE_ERROR_INVALID_HANDLE, desc);
    alphamoe_params p, p_before;
    memset(&p, 0x3C, sizeof p);
    p.struct_size = sizeof p;
    p_before = p;
    if (alphamoe_router_get_params(r, &p) != ALPHAMOE_ERROR_INVALID_HANDLE) fail_msg("%s: get_params", what);
    assert_memory_equal(&p, &p_before, sizeof p);
    alphamoe_sizes z, z_before;
    memset(&z, 0x3C, sizeof z);
    z.struct_size = sizeof z;
    z_before = z;
    if (alphamoe_router_sizes(r, &z) != ALPHAMOE_ERROR_INVALID_HANDLE) fail_msg("%s: sizes", what);
    assert_memory_equal(&z, &z_before, sizeof z);
    const alphamoe_device_attributes d = {sizeof d, 90, 132, 1, 1, 0};
    alphamoe_selection s, s_before;
    memset(&s, 0x3C, sizeof s);
    s.struct_size = sizeof s;
    s_before = s;
    if (alphamoe_router_select(r, 1, &d, &s) != ALPHAMOE_ERROR_INVALID_HANDLE) fail_msg("%s: select", what);
    assert_memory_equal(&s, &s_before, sizeof s);
}

/* Memory that never was a router, and (without AddressSanitizer) a
 * destroyed one: refused by every entry point; destroying either does
 * nothing, a second destroy included. */
static void test_invalid_handle(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x2011);
    fixture fx;
    fixture_init(&fx, &rng);
    static const unsigned char fills[] = {0x00, 0xA5, 0xFF};
    for (size_t f = 0; f < sizeof fills; ++f) {
        uint64_t junk[64], junk_before[64];
        memset(junk, fills[f], sizeof junk);
        memcpy(junk_before, junk, sizeof junk);
        alphamoe_router *fake = (alphamoe_router *)(void *)junk;
        char what[64];
        snprintf(what, sizeof what, "memory of bytes 0x%02x", fills[f]);
        expect_invalid_handle(&fx, fake, what);
        alphamoe_router_destroy(fake); /* must neither free nor write it */
        assert_memory_equal(junk, junk_before, sizeof junk);
    }
#ifdef ADDRESS_SANITIZER
    print_message("# AddressSanitizer build: a destroyed router is not tried (reading it is a use after free)\n");
#else
    alphamoe_router *r = expect_create_ok(&fx.params, "a router to destroy");
    alphamoe_router_destroy(r);
    /* Nothing allocates between the destroy and these calls: the memory is
     * not handed out again. */
    expect_invalid_handle(&fx, r, "a destroyed router");
    alphamoe_router_destroy(r); /* twice: nothing, no abort */
#endif
    fixture_free(&fx);
}

/* An empty batch writes num_tokens_post_padded = 0 and nothing else; its
 * token-shaped pointers may be NULL (an empty tensor's data pointer). */
static void test_route_host_empty_batch(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x2003);
    for (int i = 0; i < 30; ++i) {
        fixture fx;
        fixture_init(&fx, &rng);
        for (int variant = 0; variant < 3; ++variant) {
            alphamoe_buffers b = fx.valid;
            const float *lg = fx.logits;
            if (variant >= 1) {
                b.topk_ids = NULL;
                b.topk_weights = NULL;
                lg = NULL;
            }
            if (variant == 2) {
                b.expert_counts = NULL;
                b.expert_offsets = NULL;
                b.pair_to_sorted = NULL;
                b.workspace = NULL;
                b.workspace_bytes = 0;
            }
            assert_int_equal(alphamoe_route_host(fx.router, 0, lg, &b), ALPHAMOE_OK);
            assert_int_equal(fx.plan.num_tokens_post_padded[0], 0);
            fx.plan.num_tokens_post_padded[0] = TEST_POISON_I32;
            fixture_expect_untouched(&fx, "empty batch");
        }
        fixture_free(&fx);
    }
}

/* A router sized for no tokens has empty plan arrays, which allocators hand
 * out as NULL: the header allows NULL for them when the capacity is 0. */
static void test_route_host_zero_capacity(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x2004);
    for (int i = 0; i < 20; ++i) {
        const int32_t E = 1 + (int32_t)rng_below(&rng, 512);
        const int32_t k = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16));
        alphamoe_params p = test_params(E, k, 1 + (int32_t)rng_below(&rng, 256), 0, 0u);
        p.flags = rng_below(&rng, 2) ? ALPHAMOE_FLAG_TAIL_FILL : 0u;
        alphamoe_router *r = expect_create_ok(&p, "zero-capacity router");
        alphamoe_sizes z;
        memset(&z, 0, sizeof z);
        z.struct_size = sizeof z;
        assert_int_equal(alphamoe_router_sizes(r, &z), ALPHAMOE_OK);
        assert_int_equal(z.sorted_token_ids.elements, 0);
        int32_t ntpp[1 + TEST_GUARD];
        for (int g = 0; g < 1 + TEST_GUARD; ++g) ntpp[g] = TEST_POISON_I32;
        alphamoe_buffers b;
        memset(&b, 0, sizeof b);
        b.struct_size = sizeof b;
        b.num_tokens_post_padded = ntpp;
        assert_int_equal(alphamoe_route_host(r, 0, NULL, &b), ALPHAMOE_OK);
        assert_int_equal(ntpp[0], 0);
        for (int g = 1; g < 1 + TEST_GUARD; ++g) assert_int_equal(ntpp[g], TEST_POISON_I32);
        ntpp[0] = TEST_POISON_I32;
        assert_int_equal(alphamoe_route_host(r, 1, NULL, &b), ALPHAMOE_ERROR_NUM_TOKENS);
        b.num_tokens_post_padded = NULL;
        assert_int_equal(alphamoe_route_host(r, 0, NULL, &b), ALPHAMOE_ERROR_NULL_POINTER);
        assert_int_equal(alphamoe_route(r, 0, NULL, &b, NULL), ALPHAMOE_ERROR_NULL_POINTER);
        for (int g = 0; g < 1 + TEST_GUARD; ++g) assert_int_equal(ntpp[g], TEST_POISON_I32);
        alphamoe_router_destroy(r);
    }
}

/* ------------------------------------------------------------ status strings */

static const char *const status_names[] = {
    "ALPHAMOE_OK",
    "ALPHAMOE_ERROR_NULL_POINTER",
    "ALPHAMOE_ERROR_STRUCT_SIZE",
    "ALPHAMOE_ERROR_NUM_EXPERTS",
    "ALPHAMOE_ERROR_TOP_K",
    "ALPHAMOE_ERROR_BLOCK_M",
    "ALPHAMOE_ERROR_MAX_TOKENS",
    "ALPHAMOE_ERROR_NUM_TOKENS",
    "ALPHAMOE_ERROR_SHARED_EXPERT",
    "ALPHAMOE_ERROR_ROW_STRIDE",
    "ALPHAMOE_ERROR_FLAGS",
    "ALPHAMOE_ERROR_SPECIALIZATION",
    "ALPHAMOE_ERROR_ALIGNMENT",
    "ALPHAMOE_ERROR_CAPACITY",
    "ALPHAMOE_ERROR_WORKSPACE",
    "ALPHAMOE_ERROR_NO_DRIVER",
    "ALPHAMOE_ERROR_NO_DEVICE",
    "ALPHAMOE_ERROR_NO_IMAGE",
    "ALPHAMOE_ERROR_UNSUPPORTED_DEVICE",
    "ALPHAMOE_ERROR_CUDA",
    "ALPHAMOE_ERROR_OUT_OF_MEMORY",
    "ALPHAMOE_ERROR_INVALID_ARGUMENT",
    "ALPHAMOE_ERROR_SCORING",
    "ALPHAMOE_ERROR_LOGITS_TYPE",
    "ALPHAMOE_ERROR_GROUPS",
    "ALPHAMOE_ERROR_SCALING_FACTOR",
    "ALPHAMOE_ERROR_EXPERT_PARALLEL",
    "ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR",
    "ALPHAMOE_ERROR_INVALID_HANDLE",
    "ALPHAMOE_ERROR_HASH_ROUTING",
    "ALPHAMOE_ERROR_REDUNDANT_EXPERTS",
};
#define STATUS_COUNT ((int)(sizeof status_names / sizeof status_names[0]))

static int is_ident_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static void test_status_strings(void **state) {
    (void)state;
    /* The table above must track the header's enum. */
    assert_int_equal(STATUS_COUNT, ALPHAMOE_ERROR_REDUNDANT_EXPERTS + 1);
    /* Values are ABI: the first version's never move. */
    assert_int_equal(ALPHAMOE_ERROR_TOP_K, 4);
    assert_int_equal(ALPHAMOE_ERROR_CUDA, 19);
    assert_int_equal(ALPHAMOE_ERROR_INVALID_ARGUMENT, 21);
    assert_int_equal(ALPHAMOE_ERROR_SCORING, 22);
    const char *msg[STATUS_COUNT];
    for (int s = 0; s < STATUS_COUNT; ++s) {
        msg[s] = alphamoe_status_string((alphamoe_status)s);
        if (!msg[s]) fail_msg("status %d: NULL message", s);
        const size_t n = strlen(status_names[s]);
        if (strncmp(msg[s], status_names[s], n) != 0 || is_ident_char(msg[s][n]))
            fail_msg("status %d: message \"%s\" does not start with %s", s, msg[s], status_names[s]);
        for (int t = 0; t < s; ++t)
            if (strcmp(msg[s], msg[t]) == 0) fail_msg("statuses %d and %d share the message \"%s\"", t, s, msg[s]);
    }
    const int unknown[] = {-1, STATUS_COUNT, STATUS_COUNT + 1, 1000, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; ++i) {
        const char *m = alphamoe_status_string((alphamoe_status)unknown[i]);
        if (!m) fail_msg("unknown status %d: NULL message", unknown[i]);
        /* Success must never be claimed for a value that is not a status. */
        if (strcmp(m, msg[ALPHAMOE_OK]) == 0) fail_msg("unknown status %d reads as success", unknown[i]);
    }
    /* Specialization names: the four values, and NULL for any other int a C
     * caller may pass. */
    assert_string_equal(alphamoe_specialization_name(ALPHAMOE_SPECIALIZATION_AUTO), "auto");
    assert_string_equal(alphamoe_specialization_name(ALPHAMOE_SPECIALIZATION_LARGE), "large");
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; ++i)
        if (unknown[i] < 0 || unknown[i] > ALPHAMOE_SPECIALIZATION_LARGE)
            assert_null(alphamoe_specialization_name((alphamoe_specialization)unknown[i]));
}

/* ------------------------------------------------------------ selection */

static alphamoe_device_attributes device_attrs(int32_t cc, int32_t sms, int32_t occupancy, int32_t coop) {
    alphamoe_device_attributes d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.compute_capability = cc;
    d.multiprocessor_count = sms;
    d.cooperative_ctas_per_sm = occupancy;
    d.cooperative_launch = coop;
    return d;
}

static alphamoe_selection blank_selection(void) {
    alphamoe_selection s;
    memset(&s, 0xA7, sizeof s);
    s.struct_size = sizeof s;
    return s;
}

#define SWEEP_MAX 70000

static const char *spec_name(int s) {
    switch (s) {
    case ALPHAMOE_SPECIALIZATION_AUTO: return "AUTO";
    case ALPHAMOE_SPECIALIZATION_TINY: return "TINY";
    case ALPHAMOE_SPECIALIZATION_SMALL: return "SMALL";
    case ALPHAMOE_SPECIALIZATION_LARGE: return "LARGE";
    default: return "?";
    }
}

static alphamoe_params router_params(const alphamoe_router *r) {
    alphamoe_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    assert_int_equal(alphamoe_router_get_params(r, &p), ALPHAMOE_OK);
    return p;
}

/* Checks one selection against the launch invariants; returns the chosen
 * specialization. */
static int check_selection(const alphamoe_router *r, int forced, int32_t M, const alphamoe_device_attributes *d) {
    alphamoe_selection s = blank_selection();
    const alphamoe_status st = alphamoe_router_select(r, M, d, &s);
    const alphamoe_params rp = router_params(r);
    if (st != ALPHAMOE_OK)
        fail_msg("select(%s, M=%d, SMs=%d, occ=%d): %s", spec_name(forced), M, d->multiprocessor_count,
                 d->cooperative_ctas_per_sm, alphamoe_status_string(st));
    const int64_t grid = s.grid_ctas, per = s.tokens_per_cta;
    const int64_t resident = (int64_t)d->multiprocessor_count * d->cooperative_ctas_per_sm;
    /* A routed wide call of 2 to 128 tokens that fit a co-resident grid
     * runs as a cooperative grid of a token a CTA. */
    const int wide_token_ctas = gpu_wide_call(&rp) && !(rp.flags & ALPHAMOE_FLAG_SHARED_EXPERT) && M >= 2 &&
                                M <= 128 && d->cooperative_launch && M <= resident;
    const char *why = NULL;
    if (s.struct_size != sizeof s) why = "struct_size not kept";
    else if (grid < 1) why = "grid_ctas < 1";
    else if (grid > 256) why = "grid_ctas > 256";
    else if (grid > 255 && gpu_wide_call(&rp))
        why = "a wide grid keeps its totals in the count table's row after its CTAs': at most 255";
    else if (per < 1) why = "tokens_per_cta < 1";
    else if (grid * per < M) why = "grid does not cover every token";
    else if ((grid - 1) * per >= (M > 0 ? M : 1)) why = "a CTA would get no token";
    else if (s.block_threads != 512) why = "block_threads != 512";
    else if (s.image_arch != 90) why = "image_arch != 90 for cc 90";
    else if (s.specialization < ALPHAMOE_SPECIALIZATION_TINY || s.specialization > ALPHAMOE_SPECIALIZATION_LARGE)
        why = "specialization out of range";
    else if (forced != ALPHAMOE_SPECIALIZATION_AUTO && (int)s.specialization != forced)
        why = "forced specialization not honoured";
    else if (forced == ALPHAMOE_SPECIALIZATION_AUTO && wide_token_ctas &&
             (s.specialization != ALPHAMOE_SPECIALIZATION_SMALL || per != 1 || grid != M))
        why = "AUTO did not run a wide call of 2 to 128 tokens as a grid of a token a CTA";
    else if (M <= 8 && forced == ALPHAMOE_SPECIALIZATION_AUTO && !wide_token_ctas &&
             s.specialization != ALPHAMOE_SPECIALIZATION_TINY)
        why = "AUTO did not pick TINY for M <= 8";
    else if (s.specialization == ALPHAMOE_SPECIALIZATION_TINY && grid != 1) why = "TINY is one CTA";
    else if (s.specialization != ALPHAMOE_SPECIALIZATION_TINY && !s.cooperative)
        why = "a grid-barrier specialization must launch cooperatively";
    else if (s.cooperative && grid > resident) why = "cooperative grid larger than the resident CTAs";
    else if (s.specialization == ALPHAMOE_SPECIALIZATION_SMALL && M <= 256 && grid > 8 && !(wide_token_ctas && per == 1))
        why = "small up to 256 tokens is one cluster of at most 8 CTAs, or a wide grid of a token a CTA";
    else if (s.specialization == ALPHAMOE_SPECIALIZATION_LARGE &&
             !large_grid_holds(M, d->multiprocessor_count, &rp))
        why = "large past its group sums' 2^27 pairs";
    if (why)
        fail_msg("select(%s, M=%d, SMs=%d, occ=%d): %s (spec %d grid %d per_cta %d threads %d arch %d coop %d)",
                 spec_name(forced), M, d->multiprocessor_count, d->cooperative_ctas_per_sm, why,
                 (int)s.specialization, s.grid_ctas, s.tokens_per_cta, s.block_threads, s.image_arch,
                 s.cooperative);
    return (int)s.specialization;
}

/* A router of sigmoid scoring over E experts (k 8, block_m 64), with
 * `groups` groups keeping half, and the flags given. */
static alphamoe_router *sigmoid_router(int32_t E, int32_t groups, uint32_t flags) {
    alphamoe_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.num_experts = E;
    p.top_k = 8;
    p.block_m = 64;
    p.max_tokens = 64;
    p.flags = flags;
    p.scoring = ALPHAMOE_SCORING_SIGMOID;
    p.num_groups = groups;
    p.topk_groups = groups > 1 ? groups / 2 : 0;
    if (flags & ALPHAMOE_FLAG_EXPERT_MAP) p.local_expert_count = E / 2;
    alphamoe_router *r = NULL;
    assert_int_equal(alphamoe_router_create(&p, &r), ALPHAMOE_OK);
    return r;
}

/* Sigmoid scoring over more than 128 candidates, 2 to 16 tokens: small's
 * grid of a token a CTA, one cluster (each CTA ranks its token); every
 * other call as before. */
static void test_select_token_ctas(void **state) {
    (void)state;
    alphamoe_device_attributes h200 = device_attrs(90, 132, 1, 1);
    h200.max_cluster_ctas = 16; /* what the library reads off a Hopper device */
    struct {
        alphamoe_router *r;
        int token_ctas;
        const char *what;
    } routers[] = {
        {sigmoid_router(256, 8, ALPHAMOE_FLAG_CORRECTION_BIAS), 1, "DeepSeek-V3 (8 groups of 32)"},
        {sigmoid_router(384, 1, ALPHAMOE_FLAG_CORRECTION_BIAS), 1, "Kimi-K2 (E384, no groups)"},
        {sigmoid_router(160, 0, 0u), 1, "sigmoid over 160 experts"},
        {sigmoid_router(128, 0, ALPHAMOE_FLAG_CORRECTION_BIAS), 0, "sigmoid over 128 experts (a warp ranks 4 slots)"},
        {sigmoid_router(256, 4, ALPHAMOE_FLAG_CORRECTION_BIAS), 0, "groups of 64"},
        {sigmoid_router(256, 8, ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_EXPERT_MAP), 0, "an expert map"},
        {make_router(512, 8, 64, 64, 0u, ALPHAMOE_SPECIALIZATION_AUTO), 0, "the renormalized softmax"},
    };
    for (size_t i = 0; i < sizeof routers / sizeof routers[0]; ++i) {
        for (int32_t M = 0; M <= 20; ++M) {
            alphamoe_selection s = blank_selection();
            assert_int_equal(alphamoe_router_select(routers[i].r, M, &h200, &s), ALPHAMOE_OK);
            const int want = routers[i].token_ctas && M >= 2 && M <= 16;
            const int got = s.specialization == ALPHAMOE_SPECIALIZATION_SMALL && s.tokens_per_cta == 1 &&
                            s.grid_ctas == M && s.cooperative;
            if (want != got)
                fail_msg("%s, M=%d: spec %d grid %d per_cta %d, expected %s", routers[i].what, M,
                         (int)s.specialization, s.grid_ctas, s.tokens_per_cta,
                         want ? "small, a token a CTA" : "the usual selection");
            if (!want && M <= 16 && s.specialization != ALPHAMOE_SPECIALIZATION_TINY)
                fail_msg("%s, M=%d: not tiny", routers[i].what, M);
        }
        /* Clusters of the portable size only (0 reads as 8): a grid of a
         * token a CTA up to 8 tokens, tiny beyond. */
        const alphamoe_device_attributes portable = device_attrs(90, 132, 1, 1);
        for (int32_t M = 2; M <= 16; ++M) {
            alphamoe_selection s = blank_selection();
            assert_int_equal(alphamoe_router_select(routers[i].r, M, &portable, &s), ALPHAMOE_OK);
            const int want = routers[i].token_ctas && M <= 8;
            const int got = s.specialization == ALPHAMOE_SPECIALIZATION_SMALL && s.tokens_per_cta == 1 &&
                            s.grid_ctas == M && s.cluster_ctas == M;
            if (want != got || (!want && s.specialization != ALPHAMOE_SPECIALIZATION_TINY))
                fail_msg("%s, M=%d, clusters of 8: spec %d grid %d per_cta %d cluster %d", routers[i].what, M,
                         (int)s.specialization, s.grid_ctas, s.tokens_per_cta, s.cluster_ctas);
        }
        /* Fewer multiprocessors than tokens: no grid of a token a CTA. */
        const alphamoe_device_attributes four_sms = device_attrs(90, 4, 1, 1);
        alphamoe_selection s = blank_selection();
        assert_int_equal(alphamoe_router_select(routers[i].r, 8, &four_sms, &s), ALPHAMOE_OK);
        if (s.specialization != ALPHAMOE_SPECIALIZATION_TINY)
            fail_msg("%s on 4 SMs, M=8: spec %d, not tiny", routers[i].what, (int)s.specialization);
        alphamoe_router_destroy(routers[i].r);
    }
}

static void test_select_sweep(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x3001);
    const alphamoe_device_attributes h200 = device_attrs(90, 132, 1, 1);
    for (int shared = 0; shared < 2; ++shared) {
        for (int forced = ALPHAMOE_SPECIALIZATION_AUTO; forced <= ALPHAMOE_SPECIALIZATION_LARGE; ++forced) {
            const int32_t E = 2 + (int32_t)rng_below(&rng, 511);
            const int32_t k = 2 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16) - 1);
            alphamoe_router *r = make_router(E, k, 1 + (int32_t)rng_below(&rng, 256), SWEEP_MAX,
                                             shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u, forced);
            int prev = 0;
            for (int32_t M = 0; M <= SWEEP_MAX; ++M) {
                const int spec = check_selection(r, forced, M, &h200);
                if (forced == ALPHAMOE_SPECIALIZATION_AUTO && spec < prev)
                    fail_msg("AUTO not monotone: M=%d picks %s after %s", M, spec_name(spec), spec_name(prev));
                prev = spec;
            }
            /* Other device shapes: fewer and more multiprocessors than the
             * grid cap, higher occupancy. */
            const alphamoe_device_attributes others[] = {device_attrs(90, 132, 2, 1), device_attrs(90, 8, 1, 1),
                                                         device_attrs(90, 1, 1, 1), device_attrs(90, 400, 3, 1),
                                                         device_attrs(90, 1 + (int32_t)rng_below(&rng, 300),
                                                                      1 + (int32_t)rng_below(&rng, 4), 1)};
            for (size_t a = 0; a < sizeof others / sizeof others[0]; ++a) {
                prev = 0;
                for (int32_t M = 0; M <= SWEEP_MAX; M += (M < 4096 ? 1 : 97)) {
                    const int spec = check_selection(r, forced, M, &others[a]);
                    if (forced == ALPHAMOE_SPECIALIZATION_AUTO && spec < prev)
                        fail_msg("AUTO not monotone on SMs=%d: M=%d", others[a].multiprocessor_count, M);
                    prev = spec;
                }
            }
            alphamoe_router_destroy(r);
        }
    }
}

static void expect_select_status(const alphamoe_router *r, int32_t M, const alphamoe_device_attributes *d,
                                 alphamoe_status want, const char *what) {
    alphamoe_selection s = blank_selection();
    const alphamoe_selection before = s;
    const alphamoe_status st = alphamoe_router_select(r, M, d, &s);
    if (st != want)
        fail_msg("%s (M=%d): expected %s, got %s", what, M, alphamoe_status_string(want), alphamoe_status_string(st));
    if (memcmp(&s, &before, sizeof s) != 0) fail_msg("%s (M=%d): selection written on failure", what, M);
}

static void test_select_no_cooperative_launch(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x3002);
    const alphamoe_device_attributes d = device_attrs(90, 132, 1, 0);
    for (int forced = ALPHAMOE_SPECIALIZATION_AUTO; forced <= ALPHAMOE_SPECIALIZATION_LARGE; ++forced) {
        alphamoe_router *r = make_router(64, 8, 16, SWEEP_MAX, 0u, forced);
        for (int32_t M = 0; M <= SWEEP_MAX; M += (M < 3000 ? 1 : 1 + (int32_t)rng_below(&rng, 200))) {
            if (forced == ALPHAMOE_SPECIALIZATION_SMALL || forced == ALPHAMOE_SPECIALIZATION_LARGE) {
                expect_select_status(r, M, &d, ALPHAMOE_ERROR_UNSUPPORTED_DEVICE, "forced grid without cooperative launch");
                continue;
            }
            alphamoe_selection s = blank_selection();
            assert_int_equal(alphamoe_router_select(r, M, &d, &s), ALPHAMOE_OK);
            if (s.specialization != ALPHAMOE_SPECIALIZATION_TINY || s.grid_ctas != 1 || s.cooperative)
                fail_msg("no cooperative launch, %s, M=%d: spec %d grid %d coop %d", spec_name(forced), M,
                         (int)s.specialization, s.grid_ctas, s.cooperative);
            if (s.tokens_per_cta < M) fail_msg("M=%d: one CTA covers only %d tokens", M, s.tokens_per_cta);
        }
        if (forced == ALPHAMOE_SPECIALIZATION_SMALL || forced == ALPHAMOE_SPECIALIZATION_LARGE) {
            expect_select_status(r, SWEEP_MAX, &d, ALPHAMOE_ERROR_UNSUPPORTED_DEVICE,
                                 "forced grid without cooperative launch at max_tokens");
        } else {
            alphamoe_selection s = blank_selection();
            assert_int_equal(alphamoe_router_select(r, SWEEP_MAX, &d, &s), ALPHAMOE_OK);
            assert_int_equal(s.specialization, ALPHAMOE_SPECIALIZATION_TINY);
        }
        alphamoe_router_destroy(r);
    }
}

/* large keeps a group's pairs of one expert below 2^27; a call that could
 * reach that goes to small's cooperative grid (AUTO) or is refused (forced
 * large). On 132 SMs: 12 groups of 11 CTAs, so at most (2^27 - 1) / 11
 * tokens per CTA with k = 1; on one SM, one group of one CTA. */
static void test_select_large_pair_limit(void **state) {
    (void)state;
    const int32_t most_per_cta = ((1 << 27) - 1) / 11;
    const struct {
        int32_t sms, largest_m;
    } devices[] = {{132, 132 * most_per_cta}, {1, (1 << 27) - 1}};
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; ++i) {
        const alphamoe_device_attributes d = device_attrs(90, devices[i].sms, 1, 1);
        const int32_t M = devices[i].largest_m;
        const int modes[2] = {ALPHAMOE_SPECIALIZATION_AUTO, ALPHAMOE_SPECIALIZATION_LARGE};
        for (int m = 0; m < 2; ++m) {
            const int forced = modes[m];
            alphamoe_router *r = make_router(2, 1, 8, M + 1, 0u, forced);
            assert_int_equal(check_selection(r, forced, M, &d), ALPHAMOE_SPECIALIZATION_LARGE);
            if (forced == ALPHAMOE_SPECIALIZATION_LARGE) {
                expect_select_status(r, M + 1, &d, ALPHAMOE_ERROR_UNSUPPORTED_DEVICE, "forced large past 2^27 pairs");
            } else {
                if (check_selection(r, forced, M + 1, &d) != ALPHAMOE_SPECIALIZATION_SMALL)
                    fail_msg("SMs=%d, M=%d: AUTO past large's pair limit did not pick small", devices[i].sms, M + 1);
            }
            alphamoe_router_destroy(r);
        }
    }
}

static void test_select_errors(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x3003);
    alphamoe_router *r = make_router(64, 4, 16, 5000, 0u, ALPHAMOE_SPECIALIZATION_AUTO);
    const int32_t no_image_cc[] = {80, 120, 75, 86, 89, 70};
    for (size_t i = 0; i < sizeof no_image_cc / sizeof no_image_cc[0]; ++i) {
        const alphamoe_device_attributes d = device_attrs(no_image_cc[i], 132, 1, 1);
        for (int j = 0; j < 20; ++j)
            expect_select_status(r, (int32_t)rng_below(&rng, 5001), &d, ALPHAMOE_ERROR_NO_IMAGE, "no image for cc");
        expect_select_status(r, 0, &d, ALPHAMOE_ERROR_NO_IMAGE, "no image for cc, M=0");
    }
    const alphamoe_device_attributes d = device_attrs(90, 132, 1, 1);
    expect_select_status(r, 5001, &d, ALPHAMOE_ERROR_NUM_TOKENS, "num_tokens = max_tokens + 1");
    expect_select_status(r, 5001 + (int32_t)rng_below(&rng, 100000), &d, ALPHAMOE_ERROR_NUM_TOKENS,
                         "num_tokens > max_tokens");
    expect_select_status(r, INT32_MAX, &d, ALPHAMOE_ERROR_NUM_TOKENS, "num_tokens INT32_MAX");
    expect_select_status(r, -1, &d, ALPHAMOE_ERROR_NUM_TOKENS, "num_tokens -1");
    expect_select_status(r, INT32_MIN, &d, ALPHAMOE_ERROR_NUM_TOKENS, "num_tokens INT32_MIN");

    alphamoe_device_attributes small = d;
    small.struct_size = sizeof small - 1;
    expect_select_status(r, 10, &small, ALPHAMOE_ERROR_STRUCT_SIZE, "attributes struct_size too small");
    small.struct_size = 0;
    expect_select_status(r, 10, &small, ALPHAMOE_ERROR_STRUCT_SIZE, "attributes struct_size 0");

    alphamoe_selection s = blank_selection();
    s.struct_size = sizeof s - 1;
    alphamoe_selection before = s;
    assert_int_equal(alphamoe_router_select(r, 10, &d, &s), ALPHAMOE_ERROR_STRUCT_SIZE);
    assert_memory_equal(&s, &before, sizeof s);
    s.struct_size = 0;
    before = s;
    assert_int_equal(alphamoe_router_select(r, 10, &d, &s), ALPHAMOE_ERROR_STRUCT_SIZE);
    assert_memory_equal(&s, &before, sizeof s);

    expect_select_status(NULL, 10, &d, ALPHAMOE_ERROR_NULL_POINTER, "router NULL");
    expect_select_status(r, 10, NULL, ALPHAMOE_ERROR_NULL_POINTER, "attributes NULL");
    assert_int_equal(alphamoe_router_select(r, 10, &d, NULL), ALPHAMOE_ERROR_NULL_POINTER);

    /* A pure function: the same question gets the same answer. */
    for (int i = 0; i < 200; ++i) {
        const int32_t M = (int32_t)rng_below(&rng, 5001);
        alphamoe_selection a = blank_selection(), b = blank_selection();
        memset(&b, 0x11, sizeof b);
        b.struct_size = sizeof b;
        assert_int_equal(alphamoe_router_select(r, M, &d, &a), ALPHAMOE_OK);
        assert_int_equal(alphamoe_router_select(r, M, &d, &b), ALPHAMOE_OK);
        if (a.specialization != b.specialization || a.grid_ctas != b.grid_ctas || a.block_threads != b.block_threads ||
            a.cooperative != b.cooperative || a.image_arch != b.image_arch || a.tokens_per_cta != b.tokens_per_cta)
            fail_msg("select(M=%d) differs between two calls", M);
    }
    alphamoe_router_destroy(r);
}

/* Attributes and token counts at the ends of their types: multiprocessor
 * count times occupancy past INT32_MAX, and M = INT32_MAX on a router that
 * allows it (E = k = block_m = 1 has capacity exactly INT32_MAX). The grid
 * must still be a valid one, never a wrapped or divided-by-zero value. */
static void test_select_extreme_attributes(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x3004);
    const alphamoe_device_attributes extremes[] = {
        device_attrs(90, 65536, 65536, 1),        device_attrs(90, INT32_MAX, INT32_MAX, 1),
        device_attrs(90, INT32_MAX, 1, 1),        device_attrs(90, 1, INT32_MAX, 1),
        device_attrs(90, 46341, 46341, 1),        device_attrs(90, 132, 1, 1),
        device_attrs(90, 1, 1, 1),                device_attrs(90, INT32_MAX, INT32_MAX, 0),
    };
    for (int forced = ALPHAMOE_SPECIALIZATION_AUTO; forced <= ALPHAMOE_SPECIALIZATION_LARGE; ++forced) {
        alphamoe_router *big = make_router(1, 1, 1, INT32_MAX, 0u, forced);
        const alphamoe_params big_params = router_params(big);
        alphamoe_router *wide = make_router(512, 16, 256, 100000, ALPHAMOE_FLAG_SHARED_EXPERT, forced);
        /* The wide kernels' rows: at most 255 CTAs on any device. */
        alphamoe_router *widest = make_router(2048, 32, 64, 100000, 0u, forced);
        for (size_t a = 0; a < sizeof extremes / sizeof extremes[0]; ++a) {
            const alphamoe_device_attributes *d = &extremes[a];
            if (!d->cooperative_launch && forced >= ALPHAMOE_SPECIALIZATION_SMALL) {
                expect_select_status(big, INT32_MAX, d, ALPHAMOE_ERROR_UNSUPPORTED_DEVICE, "no cooperative launch");
                continue;
            }
            const int32_t big_tokens[] = {0, 1, 17, 513, INT32_MAX - 255, INT32_MAX - 1, INT32_MAX,
                                          (int32_t)rng_below(&rng, INT32_MAX)};
            for (size_t m = 0; m < sizeof big_tokens / sizeof big_tokens[0]; ++m) {
                if (forced == ALPHAMOE_SPECIALIZATION_LARGE && !large_grid_holds(big_tokens[m], d->multiprocessor_count, &big_params))
                    expect_select_status(big, big_tokens[m], d, ALPHAMOE_ERROR_UNSUPPORTED_DEVICE,
                                         "forced large past 2^27 pairs per group");
                else
                    check_selection(big, forced, big_tokens[m], d);
            }
            for (int i = 0; i < 50; ++i) check_selection(wide, forced, (int32_t)rng_below(&rng, 100001), d);
            for (int i = 0; i < 50; ++i) check_selection(widest, forced, (int32_t)rng_below(&rng, 100001), d);
        }
        alphamoe_router_destroy(big);
        alphamoe_router_destroy(wide);
        alphamoe_router_destroy(widest);
    }
}

int main(void) {
    test_base_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_null_pointers),
        cmocka_unit_test(test_create_struct_size),
        cmocka_unit_test(test_create_num_experts),
        cmocka_unit_test(test_create_top_k),
        cmocka_unit_test(test_create_block_m),
        cmocka_unit_test(test_create_max_tokens),
        cmocka_unit_test(test_create_shared_expert),
        cmocka_unit_test(test_create_row_stride),
        cmocka_unit_test(test_create_flags),
        cmocka_unit_test(test_create_specialization),
        cmocka_unit_test(test_create_scoring),
        cmocka_unit_test(test_create_logits_type),
        cmocka_unit_test(test_create_groups),
        cmocka_unit_test(test_create_scaling_factor),
        cmocka_unit_test(test_create_expert_parallel),
        cmocka_unit_test(test_create_reserved),
        cmocka_unit_test(test_create_hash_routing),
        cmocka_unit_test(test_create_redundant_experts),
        cmocka_unit_test(test_create_shared_with_flavours),
        cmocka_unit_test(test_create_combinations),
        cmocka_unit_test(test_create_valid_boundaries),
        cmocka_unit_test(test_get_params),
        cmocka_unit_test(test_route_host_rejects),
        cmocka_unit_test(test_route_device_rejects),
        cmocka_unit_test(test_unsupported_flavour_status),
        cmocka_unit_test(test_invalid_handle),
        cmocka_unit_test(test_route_host_empty_batch),
        cmocka_unit_test(test_route_host_zero_capacity),
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_select_sweep),
        cmocka_unit_test(test_select_token_ctas),
        cmocka_unit_test(test_select_no_cooperative_launch),
        cmocka_unit_test(test_select_errors),
        cmocka_unit_test(test_select_large_pair_limit),
        cmocka_unit_test(test_select_extreme_attributes),
    };
    return cmocka_run_group_tests_name("validation", tests, NULL, NULL);
}
