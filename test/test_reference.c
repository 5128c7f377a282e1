/* alphamoe_route_host against a second, independent implementation of the
 * contract written here: per token a qsort of the expert indices with a
 * comparator that states section 3 directly on float values, weights in
 * long double per section 4, and the plan from a sort of all (expert, pair)
 * tuples. The two share nothing but the contract, so a bug has to be made
 * twice to slip through. Ids and plan must match bitwise, weights within the
 * contract's 4e-6, and nothing outside the live extents may be written. */
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

#include "flavour_reference.h"
#include "test_support.h"

#define WEIGHT_TOL 4e-6f

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

/* ------------------------------------------------------------ the second implementation */

/* qsort has no context argument; the row being ranked lives here. */
static const float *g_rank_row;

/* Section 3: a before b when L[a] > L[b], or equal (as IEEE numbers, so
 * -0.0 == +0.0) and a < b; NaN after every number, NaNs by id. */
static int rank_compare(const void *pa, const void *pb) {
    const int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    const float x = g_rank_row[a], y = g_rank_row[b];
    const int nx = isnan(x) != 0, ny = isnan(y) != 0;
    if (nx != ny) return nx ? 1 : -1;
    if (!nx) {
        if (x > y) return -1;
        if (x < y) return 1;
    }
    return (a > b) - (a < b);
}

/* Section 4, in long double. */
static void reference_weights(const float *v, int32_t k, float *w) {
    int have = 0;
    long double m = 0.0L;
    for (int32_t j = 0; j < k; ++j)
        if (!isnan(v[j]) && (!have || (long double)v[j] > m)) {
            m = v[j];
            have = 1;
        }
    if (!have || m == -INFINITY) {
        for (int32_t j = 0; j < k; ++j) w[j] = 0.0f;
        return;
    }
    if (m == INFINITY) {
        int n = 0;
        for (int32_t j = 0; j < k; ++j) n += v[j] == INFINITY;
        for (int32_t j = 0; j < k; ++j) w[j] = v[j] == INFINITY ? (float)(1.0L / n) : 0.0f;
        return;
    }
    long double e[ALPHAMOE_MAX_TOP_K], sum = 0.0L;
    for (int32_t j = 0; j < k; ++j) {
        e[j] = isnan(v[j]) ? 0.0L : expl((long double)v[j] - m);
        sum += e[j];
    }
    for (int32_t j = 0; j < k; ++j) w[j] = (float)(e[j] / sum);
}

typedef struct pair_key {
    int32_t expert, pair;
} pair_key;

static int pair_compare(const void *pa, const void *pb) {
    const pair_key *a = pa, *b = pb;
    if (a->expert != b->expert) return (a->expert > b->expert) - (a->expert < b->expert);
    return (a->pair > b->pair) - (a->pair < b->pair);
}

/* Writes the contract's outputs for M tokens into `out`, a plan allocated
 * (with optional outputs) for the same router. */
static void reference_route(const alphamoe_params *p, int32_t M, const float *logits, host_plan *out) {
    const int32_t E = p->num_experts, k = p->top_k, bm = p->block_m;
    const int64_t stride = p->logits_row_stride ? p->logits_row_stride : E;
    const int shared = (p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) != 0;
    if (M == 0) {
        out->num_tokens_post_padded[0] = 0;
        return;
    }
    const int32_t n_candidates = shared ? E - 1 : E;
    const int32_t n_routed = shared ? k - 1 : k;
    int32_t *order = malloc((size_t)E * sizeof *order);
    assert_non_null(order);
    for (int32_t t = 0; t < M; ++t) {
        const float *row = logits + (int64_t)t * stride;
        for (int32_t e = 0; e < n_candidates; ++e) order[e] = e;
        g_rank_row = row;
        qsort(order, (size_t)n_candidates, sizeof *order, rank_compare);
        int32_t *ids = out->topk_ids + (int64_t)t * k;
        for (int32_t j = 0; j < n_routed; ++j) ids[j] = order[j];
        if (shared) ids[k - 1] = E - 1;
        float chosen[ALPHAMOE_MAX_TOP_K];
        for (int32_t j = 0; j < k; ++j) chosen[j] = row[ids[j]];
        reference_weights(chosen, k, out->topk_weights + (int64_t)t * k);
    }
    free(order);

    const int64_t P = (int64_t)M * k;
    const int32_t sentinel = (int32_t)P;
    pair_key *keys = malloc((size_t)P * sizeof *keys);
    assert_non_null(keys);
    for (int64_t i = 0; i < P; ++i) {
        keys[i].expert = out->topk_ids[i];
        keys[i].pair = (int32_t)i;
    }
    qsort(keys, (size_t)P, sizeof *keys, pair_compare);
    int64_t pos = 0, at = 0;
    for (int32_t e = 0; e < E; ++e) {
        const int64_t start = pos;
        while (at < P && keys[at].expert == e) {
            out->sorted_token_ids[pos] = keys[at].pair;
            out->pair_to_sorted[keys[at].pair] = (int32_t)pos;
            ++pos;
            ++at;
        }
        const int64_t count = pos - start;
        while ((pos - start) % bm != 0) out->sorted_token_ids[pos++] = sentinel;
        for (int64_t b = start / bm; b < pos / bm; ++b) out->expert_ids[b] = e;
        out->expert_counts[e] = (int32_t)count;
        out->expert_offsets[e] = (int32_t)start;
    }
    out->expert_offsets[E] = (int32_t)pos;
    out->num_tokens_post_padded[0] = (int32_t)pos;
    if (p->flags & ALPHAMOE_FLAG_TAIL_FILL) {
        for (int64_t i = pos; i < out->sizes.sorted_token_ids.elements; ++i) out->sorted_token_ids[i] = sentinel;
        for (int64_t b = pos / bm; b < out->sizes.expert_ids.elements; ++b) out->expert_ids[b] = -1;
    }
    free(keys);
}

/* ------------------------------------------------------------ one comparison */

typedef struct ref_case {
    int32_t E, k, bm, M, max_tokens;
    int64_t stride; /* 0: E */
    uint32_t flags;
    int optional;
    logit_pattern pattern;
    int32_t hot;
} ref_case;

static void describe(const ref_case *c, char *buf, size_t size) {
    snprintf(buf, size,
             "E=%d k=%d block_m=%d M=%d max_tokens=%d stride=%" PRId64 " flags=0x%x optional=%d pattern=%s hot=%d",
             c->E, c->k, c->bm, c->M, c->max_tokens, c->stride, c->flags, c->optional,
             logit_pattern_name(c->pattern), c->hot);
}

static alphamoe_router *case_router(const ref_case *c) {
    alphamoe_params p = test_params(c->E, c->k, c->bm, c->max_tokens, c->flags);
    p.logits_row_stride = c->stride;
    alphamoe_router *r = NULL;
    const alphamoe_status s = alphamoe_router_create(&p, &r);
    if (s != ALPHAMOE_OK) {
        char d[256];
        describe(c, d, sizeof d);
        fail_msg("create (%s): %s", d, alphamoe_status_string(s));
    }
    return r;
}

/* Routes `logits` (rows of c->stride or E) both ways and compares. */
static void compare_on(const ref_case *c, const float *logits, int check_determinism) {
    char desc[320];
    describe(c, desc, sizeof desc);
    alphamoe_router *r = case_router(c);
    host_plan expected, actual;
    if (host_plan_alloc(&expected, r, 1) != 0 || host_plan_alloc(&actual, r, c->optional) != 0)
        fail_msg("%s: host_plan_alloc failed", desc);
    host_plan_poison(&expected);
    host_plan_poison(&actual);

    const int64_t stride = c->stride ? c->stride : c->E;
    const size_t logits_bytes = (size_t)((int64_t)(c->M > 0 ? c->M : 1) * stride) * sizeof(float);
    float *before = malloc(logits_bytes);
    assert_non_null(before);
    memcpy(before, logits, logits_bytes);

    const alphamoe_status s = alphamoe_route_host(r, c->M, logits, &actual.buffers);
    if (s != ALPHAMOE_OK) fail_msg("%s: alphamoe_route_host: %s", desc, alphamoe_status_string(s));
    if (memcmp(before, logits, logits_bytes) != 0) fail_msg("%s: logits were modified", desc);
    reference_route(&expected.params, c->M, logits, &expected);

    char why[384];
    if (compare_plans(&expected, &actual, c->M, WEIGHT_TOL, why, sizeof why) != 0)
        fail_msg("%s: %s", desc, why);
    if (validate_plan(&actual, c->M, why, sizeof why) != 0) fail_msg("%s: validate_plan: %s", desc, why);

    if (check_determinism) {
        /* Section 6: a pure function of the logits' bits. */
        host_plan again;
        if (host_plan_alloc(&again, r, c->optional) != 0) fail_msg("%s: host_plan_alloc failed", desc);
        host_plan_poison(&again);
        assert_int_equal(alphamoe_route_host(r, c->M, logits, &again.buffers), ALPHAMOE_OK);
        const alphamoe_sizes *z = &actual.sizes;
        const struct {
            const void *a, *b;
            int64_t n;
            const char *name;
        } arrays[] = {
            {actual.topk_ids, again.topk_ids, z->topk_ids.elements, "topk_ids"},
            {actual.topk_weights, again.topk_weights, z->topk_weights.elements, "topk_weights"},
            {actual.sorted_token_ids, again.sorted_token_ids, z->sorted_token_ids.elements, "sorted_token_ids"},
            {actual.expert_ids, again.expert_ids, z->expert_ids.elements, "expert_ids"},
            {actual.num_tokens_post_padded, again.num_tokens_post_padded, 1, "num_tokens_post_padded"},
            {actual.expert_counts, again.expert_counts, z->expert_counts.elements, "expert_counts"},
            {actual.expert_offsets, again.expert_offsets, z->expert_offsets.elements, "expert_offsets"},
            {actual.pair_to_sorted, again.pair_to_sorted, z->pair_to_sorted.elements, "pair_to_sorted"},
        };
        for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; ++i)
            if (arrays[i].a && memcmp(arrays[i].a, arrays[i].b, (size_t)(arrays[i].n + TEST_GUARD) * 4u) != 0)
                fail_msg("%s: %s differs between two identical calls", desc, arrays[i].name);
        host_plan_free(&again);
    }
    free(before);
    host_plan_free(&expected);
    host_plan_free(&actual);
    alphamoe_router_destroy(r);
}

static void run_case(test_rng *rng, const ref_case *c, int check_determinism) {
    const int64_t stride = c->stride ? c->stride : c->E;
    const int32_t rows = c->M > 0 ? c->M : 1;
    float *logits = malloc((size_t)((int64_t)rows * stride) * sizeof(float));
    assert_non_null(logits);
    fill_logits(rng, logits, rows, c->E, stride, c->pattern, c->hot);
    compare_on(c, logits, check_determinism);
    free(logits);
}

static const int32_t E_LIST[] = {1, 2, 3, 8, 16, 60, 64, 128, 160, 256, 257, 384, 512};
static const int32_t BM_LIST[] = {1, 2, 3, 8, 16, 32, 64, 128, 256};
static const int32_t M_LIST[] = {0, 1, 2, 3, 7, 8, 9, 16, 31, 64, 127, 129, 255, 1000};
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* A case with E, block_m and M given and everything else drawn. */
static ref_case draw_case(test_rng *rng, int32_t E, int32_t bm, int32_t M) {
    ref_case c;
    memset(&c, 0, sizeof c);
    c.E = E;
    c.k = 1 + (int32_t)rng_below(rng, (uint32_t)min_i32(E, ALPHAMOE_MAX_TOP_K));
    c.bm = bm;
    c.M = M;
    /* A router sized for more tokens than the call routes: the sentinel is
     * M*k of the call, the tail runs to the sized capacity. */
    c.max_tokens = M + (rng_below(rng, 2) ? 0 : (int32_t)rng_below(rng, 50));
    if (c.max_tokens == 0) c.max_tokens = (int32_t)rng_below(rng, 2);
    switch (rng_below(rng, 3)) {
    case 0: c.stride = 0; break;
    case 1: c.stride = E; break;
    default: c.stride = E + 1 + (int64_t)rng_below(rng, 40); break;
    }
    if (c.k >= 2 && rng_below(rng, 2)) c.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
    if (rng_below(rng, 2)) c.flags |= ALPHAMOE_FLAG_TAIL_FILL;
    if (rng_below(rng, 4) == 0) c.flags |= ALPHAMOE_FLAG_PDL;
    c.optional = (int)rng_below(rng, 2);
    c.pattern = (logit_pattern)rng_below(rng, LOGITS_PATTERN_COUNT);
    c.hot = rng_below(rng, 4) == 0 ? E - 1 : (int32_t)rng_below(rng, (uint32_t)E);
    return c;
}

static void test_reference_E_by_block_m(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x7001);
    for (size_t i = 0; i < COUNT_OF(E_LIST); ++i)
        for (size_t j = 0; j < COUNT_OF(BM_LIST); ++j)
            for (int rep = 0; rep < 2; ++rep) {
                const int32_t M = M_LIST[rng_below(&rng, COUNT_OF(M_LIST))];
                const ref_case c = draw_case(&rng, E_LIST[i], BM_LIST[j], M);
                run_case(&rng, &c, rep == 0);
            }
}

static void test_reference_token_counts(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x7002);
    for (size_t i = 0; i < COUNT_OF(M_LIST); ++i)
        for (int rep = 0; rep < 12; ++rep) {
            const ref_case c = draw_case(&rng, E_LIST[rng_below(&rng, COUNT_OF(E_LIST))],
                                         BM_LIST[rng_below(&rng, COUNT_OF(BM_LIST))], M_LIST[i]);
            run_case(&rng, &c, 0);
        }
}

static void test_reference_every_k(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x7003);
    for (int32_t k = 1; k <= ALPHAMOE_MAX_TOP_K; ++k)
        for (int shared = 0; shared < 2; ++shared) {
            if (shared && k < 2) continue;
            for (int rep = 0; rep < 4; ++rep) {
                int32_t E;
                do E = E_LIST[rng_below(&rng, COUNT_OF(E_LIST))];
                while (E < k);
                ref_case c = draw_case(&rng, E, BM_LIST[rng_below(&rng, COUNT_OF(BM_LIST))],
                                       M_LIST[1 + rng_below(&rng, COUNT_OF(M_LIST) - 1)]);
                c.k = k;
                c.flags = (c.flags & ~ALPHAMOE_FLAG_SHARED_EXPERT) | (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u);
                run_case(&rng, &c, 0);
            }
        }
}

static void test_reference_every_pattern(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x7004);
    for (int pat = 0; pat < LOGITS_PATTERN_COUNT; ++pat)
        for (int rep = 0; rep < 24; ++rep) {
            ref_case c = draw_case(&rng, E_LIST[rng_below(&rng, COUNT_OF(E_LIST))],
                                   BM_LIST[rng_below(&rng, COUNT_OF(BM_LIST))],
                                   M_LIST[1 + rng_below(&rng, COUNT_OF(M_LIST) - 1)]);
            c.pattern = (logit_pattern)pat;
            /* Half of them with the shared expert whenever k allows. */
            if (c.k >= 2) {
                c.flags &= ~ALPHAMOE_FLAG_SHARED_EXPERT;
                if (rep % 2) c.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
            }
            run_case(&rng, &c, rep < 4);
        }
}

static void test_reference_random_shapes(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x7005);
    for (int i = 0; i < 400; ++i) {
        /* Off-list shapes too: any E, block_m and M. */
        const int32_t E = rng_below(&rng, 2) ? E_LIST[rng_below(&rng, COUNT_OF(E_LIST))]
                                             : 1 + (int32_t)rng_below(&rng, ALPHAMOE_MAX_EXPERTS);
        const int32_t bm = rng_below(&rng, 2) ? BM_LIST[rng_below(&rng, COUNT_OF(BM_LIST))]
                                              : 1 + (int32_t)rng_below(&rng, ALPHAMOE_MAX_BLOCK_M);
        const int32_t M = rng_below(&rng, 2) ? M_LIST[rng_below(&rng, COUNT_OF(M_LIST))]
                                             : (int32_t)rng_below(&rng, 300);
        const ref_case c = draw_case(&rng, E, bm, M);
        run_case(&rng, &c, 0);
    }
}

static void test_reference_large_batches(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x7006);
    const struct {
        int32_t E, k, bm, M;
    } shapes[] = {{64, 8, 16, 8192}, {256, 8, 64, 4099}, {512, 16, 128, 3000}, {128, 6, 1, 20000}, {8, 2, 256, 20000}};
    for (size_t i = 0; i < COUNT_OF(shapes); ++i)
        for (int shared = 0; shared < 2; ++shared) {
            ref_case c = draw_case(&rng, shapes[i].E, shapes[i].bm, shapes[i].M);
            c.k = shapes[i].k;
            c.flags = (c.flags & ~ALPHAMOE_FLAG_SHARED_EXPERT) | (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u);
            run_case(&rng, &c, shared == 0);
        }
}

/* ------------------------------------------------------------ hand-written rows */

/* Expected ids and weights read off the contract by hand. A weight marked
 * exact comes from a non-finite rule (0, equal shares of 1) and must match
 * bitwise; the rest within the tolerance. */
typedef struct hand_case {
    const char *name;
    int32_t E, k;
    uint32_t flags;
    float row[8];
    int32_t ids[8];
    double w[8];
    unsigned exact; /* bit j: w[j] exact */
} hand_case;

#define NAN_Q bits_to_float(0x7FC00000u)
#define NAN_NEG bits_to_float(0xFFC00001u)
#define NAN_PAYLOAD bits_to_float(0x7FC12345u)
#define NAN_SIG bits_to_float(0x7F800001u)
#define NAN_NEG_SIG bits_to_float(0xFF800003u)
#define DENORM bits_to_float(0x00000004u)
#define DENORM_NEG bits_to_float(0x80000004u)

static double sm2(double a, double b) { return exp(a) / (exp(a) + exp(b)); } /* weight of a against b */

static void check_hand_case(test_rng *rng, const hand_case *h) {
    const int32_t E = h->E, k = h->k;
    /* The row sits among random rows at a random token, on a router with a
     * random block size: the expectation is per token. */
    const int32_t M = 1 + (int32_t)rng_below(rng, 9);
    const int32_t at = (int32_t)rng_below(rng, (uint32_t)M);
    ref_case c;
    memset(&c, 0, sizeof c);
    c.E = E;
    c.k = k;
    c.bm = BM_LIST[rng_below(rng, COUNT_OF(BM_LIST))];
    c.M = M;
    c.max_tokens = M;
    c.flags = h->flags | (rng_below(rng, 2) ? ALPHAMOE_FLAG_TAIL_FILL : 0u);
    c.optional = 1;
    c.stride = rng_below(rng, 2) ? 0 : E + 3;
    const int64_t stride = c.stride ? c.stride : E;
    float *logits = malloc((size_t)((int64_t)M * stride) * sizeof(float));
    assert_non_null(logits);
    fill_logits(rng, logits, M, E, stride, LOGITS_RANDOM, 0);
    memcpy(logits + (int64_t)at * stride, h->row, (size_t)E * sizeof(float));

    alphamoe_router *r = case_router(&c);
    host_plan actual, expected;
    assert_int_equal(host_plan_alloc(&actual, r, 1), 0);
    assert_int_equal(host_plan_alloc(&expected, r, 1), 0);
    host_plan_poison(&actual);
    host_plan_poison(&expected);
    assert_int_equal(alphamoe_route_host(r, M, logits, &actual.buffers), ALPHAMOE_OK);
    reference_route(&expected.params, M, logits, &expected);

    /* Both implementations against the hand-derived row. */
    const host_plan *plans[2] = {&actual, &expected};
    static const char *const who[2] = {"alphamoe_route_host", "test reference"};
    for (int i = 0; i < 2; ++i) {
        const int32_t *ids = plans[i]->topk_ids + (int64_t)at * k;
        const float *w = plans[i]->topk_weights + (int64_t)at * k;
        for (int32_t j = 0; j < k; ++j) {
            if (ids[j] != h->ids[j])
                fail_msg("%s, %s: slot %d holds expert %d, contract says %d", h->name, who[i], j, ids[j], h->ids[j]);
            const int exact = (h->exact >> j) & 1u;
            const float want = (float)h->w[j];
            if (exact ? memcmp(&w[j], &want, sizeof want) != 0 : !(fabs((double)w[j] - h->w[j]) <= WEIGHT_TOL))
                fail_msg("%s, %s: slot %d weight %.9g, contract says %.9g%s", h->name, who[i], j, (double)w[j],
                         h->w[j], exact ? " exactly" : "");
        }
    }
    char why[384];
    if (compare_plans(&expected, &actual, M, WEIGHT_TOL, why, sizeof why) != 0) fail_msg("%s: %s", h->name, why);
    if (validate_plan(&actual, M, why, sizeof why) != 0) fail_msg("%s: validate_plan: %s", h->name, why);
    host_plan_free(&actual);
    host_plan_free(&expected);
    alphamoe_router_destroy(r);
    free(logits);
}

static void test_reference_hand_rows(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x7007);
    const double e1 = sm2(0.0, -1.0); /* softmax weight of x against x - 1 */
    const double third = 1.0 / 3.0;
    const double ex3[3] = {exp(3.0 - 9.0), exp(2.0 - 9.0), 1.0};
    const double s3 = ex3[0] + ex3[1] + ex3[2];
    const float inf = INFINITY;
    const unsigned all = 0xFFu;
    const hand_case cases[] = {
        {"ties: lower id wins", 6, 3, 0, {1, 3, 3, 2, 3, 0}, {1, 2, 4}, {third, third, third}, 0},
        {"all equal", 6, 4, 0, {2, 2, 2, 2, 2, 2}, {0, 1, 2, 3}, {0.25, 0.25, 0.25, 0.25}, 0},
        {"-0.0 == +0.0, tie by id", 4, 2, 0, {-1, -0.0f, 0.0f, -0.0f}, {1, 2}, {0.5, 0.5}, 0},
        {"-0.0 at id 0 ties +0.0 at id 1", 2, 1, 0, {-0.0f, 0.0f}, {0}, {1.0}, all},
        {"+0.0 at id 0 ties -0.0 at id 1", 2, 1, 0, {0.0f, -0.0f}, {0}, {1.0}, all},
        {"signed zeros all tie", 3, 3, 0, {0.0f, -0.0f, 0.0f}, {0, 1, 2}, {third, third, third}, 0},
        {"denormal above zeros", 4, 3, 0, {-0.0f, DENORM, 0.0f, DENORM_NEG}, {1, 0, 2}, {third, third, third}, 0},
        {"NaN ranks after -inf", 4, 4, 0, {NAN_Q, -inf, NAN_Q, -inf}, {1, 3, 0, 2}, {0, 0, 0, 0}, all},
        {"NaN after -inf, finite first", 4, 2, 0, {NAN_Q, -inf, 5, NAN_Q}, {2, 1}, {1, 0}, 0},
        {"NaNs among themselves by id", 4, 4, 0, {NAN_NEG, 1, NAN_PAYLOAD, NAN_SIG}, {1, 0, 2, 3}, {1, 0, 0, 0},
         0xEu},
        {"NaNs of every kind by id", 6, 4, 0, {NAN_SIG, NAN_NEG_SIG, -inf, NAN_PAYLOAD, NAN_NEG, -3},
         {5, 2, 0, 1}, {1, 0, 0, 0}, 0xCu},
        {"row all NaN", 5, 3, 0, {NAN_PAYLOAD, NAN_NEG, NAN_Q, NAN_SIG, NAN_NEG_SIG}, {0, 1, 2}, {0, 0, 0}, all},
        {"row all -inf", 5, 3, 0, {-inf, -inf, -inf, -inf, -inf}, {0, 1, 2}, {0, 0, 0}, all},
        {"-inf and NaN only", 3, 2, 0, {NAN_Q, -inf, -inf}, {1, 2}, {0, 0}, all},
        {"+inf in two slots", 5, 4, 0, {1, inf, 2, inf, NAN_Q}, {1, 3, 2, 0}, {0.5, 0.5, 0, 0}, all},
        {"+inf in two of three", 5, 3, 0, {1, inf, 2, inf, NAN_Q}, {1, 3, 2}, {0.5, 0.5, 0}, all},
        {"+inf with NaN and -inf", 3, 3, 0, {inf, NAN_Q, -inf}, {0, 2, 1}, {1, 0, 0}, all},
        {"NaN slot weighs 0", 3, 3, 0, {2, NAN_Q, 1}, {0, 2, 1}, {e1, 1 - e1, 0}, 0x4u},
        {"-inf beside a finite logit", 2, 2, 0, {-inf, 0}, {1, 0}, {1, 0}, 0},
        {"huge finite logits", 2, 2, 0, {1e30f, -1e30f}, {0, 1}, {1, 0}, 0},
        {"largest finite logits", 3, 2, 0, {-3.4028235e38f, 3.4028235e38f, 3.4028235e38f}, {1, 2}, {0.5, 0.5}, 0},
        {"shared expert NaN", 5, 3, ALPHAMOE_FLAG_SHARED_EXPERT, {1, 4, 3, 2, NAN_Q}, {1, 2, 4}, {e1, 1 - e1, 0},
         0x4u},
        {"shared expert +inf", 5, 3, ALPHAMOE_FLAG_SHARED_EXPERT, {1, 4, 3, 2, inf}, {1, 2, 4}, {0, 0, 1}, all},
        {"shared expert -inf", 5, 3, ALPHAMOE_FLAG_SHARED_EXPERT, {1, 4, 3, 2, -inf}, {1, 2, 4}, {e1, 1 - e1, 0},
         0},
        {"shared expert never routed", 5, 3, ALPHAMOE_FLAG_SHARED_EXPERT, {0, 1, 2, 3, 9}, {3, 2, 4},
         {ex3[0] / s3, ex3[1] / s3, ex3[2] / s3}, 0},
        {"shared beside NaN routed", 5, 3, ALPHAMOE_FLAG_SHARED_EXPERT, {NAN_Q, NAN_NEG, NAN_Q, NAN_Q, 0.5f},
         {0, 1, 4}, {0, 0, 1}, 0x3u},
        {"shared, all equal", 5, 3, ALPHAMOE_FLAG_SHARED_EXPERT, {5, 5, 5, 5, 5}, {0, 1, 4}, {third, third, third},
         0},
        {"shared, E=2 k=2", 2, 2, ALPHAMOE_FLAG_SHARED_EXPERT, {7, -3}, {0, 1}, {sm2(7, -3), sm2(-3, 7)}, 0},
        {"shared -inf behind routed +inf", 3, 3, ALPHAMOE_FLAG_SHARED_EXPERT, {NAN_Q, inf, -inf}, {1, 0, 2},
         {1, 0, 0}, all},
        {"E=1 k=1 finite", 1, 1, 0, {3.0f}, {0}, {1}, all},
        {"E=1 k=1 -0.0", 1, 1, 0, {-0.0f}, {0}, {1}, all},
        {"E=1 k=1 huge", 1, 1, 0, {-3.4028235e38f}, {0}, {1}, all},
        {"E=1 k=1 denormal", 1, 1, 0, {DENORM_NEG}, {0}, {1}, all},
        {"E=1 k=1 +inf", 1, 1, 0, {inf}, {0}, {1}, all},
        {"E=1 k=1 -inf", 1, 1, 0, {-inf}, {0}, {0}, all},
        {"E=1 k=1 NaN", 1, 1, 0, {NAN_NEG}, {0}, {0}, all},
    };
    for (size_t i = 0; i < COUNT_OF(cases); ++i)
        for (int rep = 0; rep < 8; ++rep) check_hand_case(&rng, &cases[i]);

    /* Three +inf slots share weight 1 equally: bitwise equal shares. */
    const hand_case three_inf = {"three +inf", 4, 4, 0, {inf, inf, inf, 0}, {0, 1, 2, 3}, {third, third, third, 0}, 0x8u};
    check_hand_case(&rng, &three_inf);
    {
        alphamoe_router *r = case_router(&(ref_case){.E = 4, .k = 3, .bm = 4, .M = 1, .max_tokens = 1});
        host_plan plan;
        assert_int_equal(host_plan_alloc(&plan, r, 0), 0);
        host_plan_poison(&plan);
        const float row[4] = {inf, inf, inf, 0};
        assert_int_equal(alphamoe_route_host(r, 1, row, &plan.buffers), ALPHAMOE_OK);
        assert_memory_equal(&plan.topk_weights[0], &plan.topk_weights[1], sizeof(float));
        assert_memory_equal(&plan.topk_weights[0], &plan.topk_weights[2], sizeof(float));
        host_plan_free(&plan);
        alphamoe_router_destroy(r);
    }
}

/* Ranking is by value, never by bit pattern: rows whose ranking a sort of
 * raw or sign-magnitude bits would get wrong, in random positions. */
static void test_reference_value_order(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x7008);
    for (int rep = 0; rep < 300; ++rep) {
        const int32_t E = E_LIST[rng_below(&rng, COUNT_OF(E_LIST))];
        ref_case c = draw_case(&rng, E, BM_LIST[rng_below(&rng, COUNT_OF(BM_LIST))], 1 + (int32_t)rng_below(&rng, 40));
        const int64_t stride = c.stride ? c.stride : E;
        float *logits = malloc((size_t)((int64_t)c.M * stride) * sizeof(float));
        assert_non_null(logits);
        fill_logits(&rng, logits, c.M, E, stride, LOGITS_RANDOM, 0);
        static const uint32_t tricky[] = {0x80000000u, 0x00000000u, 0x00000001u, 0x80000001u, 0x7F800000u,
                                          0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu,
                                          0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F800000u, 0xBF800000u};
        for (int32_t t = 0; t < c.M; ++t)
            for (int32_t e = 0; e < E; ++e)
                if (rng_below(&rng, 2))
                    logits[(int64_t)t * stride + e] = bits_to_float(tricky[rng_below(&rng, COUNT_OF(tricky))]);
        compare_on(&c, logits, 0);
        free(logits);
    }
}

/* ------------------------------------------------------------ redundant experts */

/* One redundant-experts case: the flagged router against the same call
 * without the flag (no expert parallelism either), with the replica rule
 * applied here by hand and the plan built by the test's own plan builder
 * (flavour_reference_plan). */
typedef struct eplb_case {
    const char *name;
    int32_t E, k, P, R, bm, M;
    uint32_t flags;      /* besides ALPHAMOE_FLAG_REDUNDANT_EXPERTS */
    int32_t scoring, groups, keep, vocab, begin, count;
    int junk;            /* replica counts and table entries outside their ranges */
} eplb_case;

/* A replica count: mostly in [1, R], with junk also 0, -1, R + 1 and the
 * int32 extremes. */
static int32_t draw_count(test_rng *rng, int32_t R, int junk) {
    static const int32_t bad[] = {0, -1, INT32_MIN, INT32_MAX};
    if (junk && rng_below(rng, 4) == 0) {
        const uint32_t i = rng_below(rng, 5);
        return i < 4 ? bad[i] : R + 1;
    }
    return 1 + (int32_t)rng_below(rng, (uint32_t)R);
}

static int32_t draw_physical(test_rng *rng, int32_t P, int junk) {
    if (junk && rng_below(rng, 5) == 0) {
        const int32_t bad[] = {-1, P, INT32_MIN, INT32_MAX, P + 7};
        return bad[rng_below(rng, 5)];
    }
    return (int32_t)rng_below(rng, (uint32_t)P);
}

static void run_eplb_case(test_rng *rng, const eplb_case *c) {
    alphamoe_params fp = test_params(c->E, c->k, c->bm, c->M > 0 ? c->M : 1, c->flags | ALPHAMOE_FLAG_REDUNDANT_EXPERTS);
    fp.scoring = c->scoring;
    fp.num_groups = c->groups;
    fp.topk_groups = c->keep;
    fp.vocab_size = c->vocab;
    fp.num_physical_experts = c->P;
    fp.replica_slots = c->R;
    fp.local_expert_begin = c->begin;
    fp.local_expert_count = c->count;
    alphamoe_params bp = fp;
    bp.flags &= ~(ALPHAMOE_FLAG_REDUNDANT_EXPERTS | ALPHAMOE_FLAG_EXPERT_MAP);
    bp.num_physical_experts = bp.replica_slots = 0;
    bp.local_expert_begin = bp.local_expert_count = 0;
    alphamoe_router *fr = NULL, *br = NULL;
    if (alphamoe_router_create(&fp, &fr) != ALPHAMOE_OK || alphamoe_router_create(&bp, &br) != ALPHAMOE_OK)
        fail_msg("%s: router creation failed", c->name);

    const int32_t E = c->E, k = c->k, P = c->P, R = c->R, M = c->M, rows = M > 0 ? M : 1;
    float *logits = malloc((size_t)rows * (size_t)E * sizeof *logits);
    float *bias = malloc((size_t)E * sizeof *bias);
    int32_t *map = malloc((size_t)P * sizeof *map);
    int32_t *count = malloc((size_t)E * sizeof *count);
    int32_t *table = malloc((size_t)E * (size_t)R * sizeof *table);
    int32_t *tokens = malloc((size_t)rows * sizeof *tokens);
    const int32_t vocab = c->vocab > 0 ? c->vocab : 1;
    int32_t *hash = malloc((size_t)vocab * (size_t)k * sizeof *hash);
    int32_t *load = malloc((size_t)(P + TEST_GUARD) * sizeof *load);
    int32_t *want_load = malloc((size_t)(P + TEST_GUARD) * sizeof *want_load);
    assert_true(logits && bias && map && count && table && tokens && hash && load && want_load);
    fill_logits(rng, logits, rows, E, E, LOGITS_RANDOM, 0);
    for (int32_t e = 0; e < E; ++e) bias[e] = rng_uniform(rng, -0.5f, 0.5f);
    const int32_t L = c->count > 0 ? c->count : P;
    for (int32_t q = 0; q < P; ++q) map[q] = (int32_t)rng_below(rng, (uint32_t)L + 2) - 1;
    for (int32_t e = 0; e < E; ++e) count[e] = draw_count(rng, R, c->junk);
    for (int64_t i = 0; i < (int64_t)E * R; ++i) table[i] = draw_physical(rng, P, c->junk);
    for (int32_t t = 0; t < rows; ++t) tokens[t] = (int32_t)rng_below(rng, (uint32_t)vocab + 1) - (t % 7 == 0);
    for (int64_t i = 0; i < (int64_t)vocab * k; ++i) hash[i] = (int32_t)rng_below(rng, (uint32_t)E + 1) - (i % 9 == 0);
    /* The load starts nonzero: the router adds, never zeroes. */
    for (int32_t q = 0; q < P + TEST_GUARD; ++q) load[q] = want_load[q] = 1 + (int32_t)rng_below(rng, 1u << 20);

    host_plan base, want, got;
    if (host_plan_alloc(&base, br, 1) || host_plan_alloc(&want, fr, 1) || host_plan_alloc(&got, fr, 1))
        fail_msg("%s: host_plan_alloc failed", c->name);
    host_plan_poison(&base);
    host_plan_poison(&want);
    host_plan_poison(&got);
    alphamoe_buffers bb = base.buffers;
    bb.correction_bias = bias;
    bb.token_ids = tokens;
    bb.hash_table = hash;
    assert_int_equal(alphamoe_route_host(br, M, logits, &bb), ALPHAMOE_OK);

    /* The replica rule, by hand (the tests' own statement of it), on the
     * logical ids; the weights stay the logical choice's. */
    const int64_t pairs = (int64_t)M * k;
    flavour_reference_replicas(&want.params, M, base.topk_ids, count, table, want.topk_ids, want_load);
    if (pairs > 0) memcpy(want.topk_weights, base.topk_weights, (size_t)pairs * sizeof(float));
    flavour_reference_plan(&want.params, M, map, &want);

    alphamoe_buffers fb = got.buffers;
    fb.correction_bias = bias;
    fb.token_ids = tokens;
    fb.hash_table = hash;
    fb.expert_map = map;
    fb.replica_count = count;
    fb.logical_to_physical = table;
    fb.physical_load = load;
    assert_int_equal(alphamoe_route_host(fr, M, logits, &fb), ALPHAMOE_OK);

    char why[384];
    if (compare_plans(&want, &got, M, 0.0f, why, sizeof why) != 0) fail_msg("%s (M=%d): %s", c->name, M, why);
    /* The weights are the logical choice's, bit for bit. */
    if (pairs > 0 && memcmp(got.topk_weights, base.topk_weights, (size_t)pairs * sizeof(float)) != 0)
        fail_msg("%s: weights differ from the call without the flag", c->name);
    for (int32_t q = 0; q < P + TEST_GUARD; ++q)
        if (load[q] != want_load[q])
            fail_msg("%s: physical_load[%d] = %d, want %d%s", c->name, q, load[q], want_load[q],
                     q >= P ? " (past P)" : "");
    int64_t mapped = 0, unmapped = 0;
    for (int64_t p = 0; p < pairs; ++p) {
        if (want.topk_ids[p] >= 0) ++mapped;
        else if (base.topk_ids[p] >= 0) ++unmapped;
    }
    print_message("# %-28s M=%-4d pairs %" PRId64 ": %" PRId64 " mapped, %" PRId64 " of no expert by the tables\n",
                  c->name, M, pairs, mapped, unmapped);

    host_plan_free(&base);
    host_plan_free(&want);
    host_plan_free(&got);
    free(logits); free(bias); free(map); free(count); free(table); free(tokens); free(hash); free(load); free(want_load);
    alphamoe_router_destroy(fr);
    alphamoe_router_destroy(br);
}

static void test_reference_redundant_experts(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x7009);
    const uint32_t map = ALPHAMOE_FLAG_EXPERT_MAP, tail = ALPHAMOE_FLAG_TAIL_FILL;
    const eplb_case cases[] = {
        /* name, E, k, P, R, bm, M, flags, scoring, groups, keep, vocab, begin, count, junk */
        {"static (R 1, P = E)", 64, 6, 64, 1, 16, 200, 0, 0, 0, 0, 0, 0, 0, 0},
        {"several replicas, P > E", 64, 8, 96, 4, 8, 300, 0, 0, 0, 0, 0, 0, 0, 0},
        {"P < E", 128, 8, 40, 3, 4, 150, tail, 0, 0, 0, 0, 0, 0, 0},
        {"junk counts and ids", 60, 5, 80, 3, 3, 400, 0, 0, 0, 0, 0, 0, 0, 1},
        {"local range over P", 32, 4, 72, 5, 2, 250, 0, 0, 0, 0, 0, 40, 24, 1},
        {"expert map over P", 48, 6, 100, 4, 16, 200, map, 0, 0, 0, 0, 0, 30, 1},
        {"hash routing", 40, 4, 56, 2, 8, 180, ALPHAMOE_FLAG_HASH_ROUTING, ALPHAMOE_SCORING_SQRT_SOFTPLUS, 0, 0, 50, 0, 0, 1},
        {"shared expert", 33, 4, 45, 6, 4, 220, ALPHAMOE_FLAG_SHARED_EXPERT, 0, 0, 0, 0, 0, 0, 1},
        {"groups, bias, sigmoid", 256, 8, 288, 2, 16, 120, ALPHAMOE_FLAG_CORRECTION_BIAS, ALPHAMOE_SCORING_SIGMOID, 8, 4, 0, 0, 0, 0},
        {"no renormalize, map, tail", 16, 3, 20, 20, 1, 90, map | tail | ALPHAMOE_FLAG_NO_RENORMALIZE, 0, 0, 0, 0, 0, 7, 1},
        {"one physical expert", 8, 2, 1, 1, 5, 70, 0, 0, 0, 0, 0, 0, 0, 0},
        {"M = 0", 64, 8, 96, 4, 8, 0, tail, 0, 0, 0, 0, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_eplb_case(&rng, &cases[i]);
}

int main(void) {
    test_base_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_hand_rows),
        cmocka_unit_test(test_reference_value_order),
        cmocka_unit_test(test_reference_E_by_block_m),
        cmocka_unit_test(test_reference_token_counts),
        cmocka_unit_test(test_reference_every_k),
        cmocka_unit_test(test_reference_every_pattern),
        cmocka_unit_test(test_reference_random_shapes),
        cmocka_unit_test(test_reference_large_batches),
        cmocka_unit_test(test_reference_redundant_experts),
    };
    return cmocka_run_group_tests_name("reference", tests, NULL, NULL);
}
