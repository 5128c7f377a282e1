/* alphamoe_route_host for every routing flavour against the second
 * implementation in test/support/flavour_reference.c: no renormalization,
 * scaling factors, sigmoid and sqrt-softplus scoring with and without a
 * correction bias,
 * grouped top-k (also checked against a brute-force formulation of its
 * definition), expert parallelism by range and by map, bf16 and fp16
 * logits, non-finite inputs, and rows whose answer is worked out by hand.
 * Ids and plan must match bitwise, weights within the contract's
 * tolerance, nothing outside the live extents may be written, and two
 * identical calls must agree bit for bit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/score_math.h"
#include "flavour_inputs.h"
#include "flavour_reference.h"
#include "logits_types.h"
#include "test_support.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

/* ------------------------------------------------------------ one case */

typedef enum ep_mode { EP_NONE, EP_RANGE, EP_MAP, EP_MAP_JUNK } ep_mode;

typedef struct flavour_case {
    int32_t E, k, bm, M, max_tokens;
    int64_t stride; /* 0: E */
    uint32_t flags; /* TAIL_FILL, SHARED_EXPERT, NO_RENORMALIZE, CORRECTION_BIAS (EXPERT_MAP from ep) */
    int32_t scoring, logits_type, groups, topk_groups;
    float scale;
    ep_mode ep;
    int32_t ep_begin, ep_count;
    int optional;
    logit_pattern pattern;
    bias_pattern bias;
    int32_t vocab; /* > 0: hash routing over a table of this many rows */
} flavour_case;

static void describe(const flavour_case *c, char *buf, size_t size) {
    static const char *const ep_names[] = {"none", "range", "map", "map+junk"};
    snprintf(buf, size,
             "E=%d k=%d block_m=%d M=%d max_tokens=%d stride=%" PRId64 " flags=0x%x scoring=%s logits=%s "
             "groups=%d keep=%d scale=%g ep=%s(%d,%d) optional=%d pattern=%s bias=%s vocab=%d",
             c->E, c->k, c->bm, c->M, c->max_tokens, c->stride, c->flags,
             scoring_name(c->scoring), logits_type_name(c->logits_type),
             c->groups, c->topk_groups, (double)c->scale, ep_names[c->ep], c->ep_begin, c->ep_count, c->optional,
             logit_pattern_name(c->pattern),
             (c->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) ? bias_pattern_name(c->bias) : "none", c->vocab);
}

static alphamoe_params case_params(const flavour_case *c) {
    alphamoe_params p = test_params(c->E, c->k, c->bm, c->max_tokens, c->flags);
    p.logits_row_stride = c->stride;
    p.scoring = c->scoring;
    p.logits_type = c->logits_type;
    p.num_groups = c->groups;
    p.topk_groups = c->topk_groups;
    p.routed_scaling_factor = c->scale;
    if (c->vocab > 0) {
        p.flags |= ALPHAMOE_FLAG_HASH_ROUTING;
        p.vocab_size = c->vocab;
    }
    if (c->ep == EP_RANGE) {
        p.local_expert_begin = c->ep_begin;
        p.local_expert_count = c->ep_count;
    } else if (c->ep != EP_NONE) {
        p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_count = c->ep_count;
    }
    return p;
}

typedef struct case_data {
    alphamoe_router *router;
    void *logits;  /* typed, [rows, stride] */
    float *values; /* what the router sees */
    float *bias;
    int32_t *map;
    int32_t *token_ids; /* [rows]: in the vocabulary and, one in eight, out of it */
    int32_t *table;     /* [vocab, k]: experts and, one in sixteen, an entry that names none */
} case_data;

static void case_data_make(test_rng *rng, const flavour_case *c, case_data *d) {
    char desc[512];
    describe(c, desc, sizeof desc);
    const alphamoe_params p = case_params(c);
    d->router = NULL;
    const alphamoe_status s = alphamoe_router_create(&p, &d->router);
    if (s != ALPHAMOE_OK) fail_msg("create (%s): %s", desc, alphamoe_status_string(s));
    const int64_t stride = c->stride ? c->stride : c->E;
    const int32_t rows = c->M > 0 ? c->M : 1;
    d->values = malloc((size_t)((int64_t)rows * stride) * sizeof(float));
    assert_non_null(d->values);
    d->logits = fill_typed_logits(rng, c->logits_type, d->values, rows, c->E, stride, c->pattern,
                                  (int32_t)rng_below(rng, (uint32_t)c->E));
    assert_non_null(d->logits);
    d->bias = malloc((size_t)c->E * sizeof *d->bias);
    d->map = malloc((size_t)c->E * sizeof *d->map);
    assert_true(d->bias && d->map);
    fill_bias(rng, d->bias, c->E, c->bias);
    fill_expert_map(rng, d->map, c->E, c->ep_count > 0 ? c->ep_count : c->E, c->ep == EP_MAP_JUNK);
    const int32_t vocab = c->vocab > 0 ? c->vocab : 1;
    d->token_ids = malloc((size_t)rows * sizeof *d->token_ids);
    d->table = malloc((size_t)vocab * (size_t)c->k * sizeof *d->table);
    assert_true(d->token_ids && d->table);
    fill_hash_inputs(rng, d->token_ids, rows, d->table, vocab, c->k, c->E);
}

static void case_data_free(case_data *d) {
    alphamoe_router_destroy(d->router);
    free(d->logits);
    free(d->values);
    free(d->bias);
    free(d->map);
    free(d->token_ids);
    free(d->table);
}

static void attach_inputs(host_plan *plan, const case_data *d) {
    plan->buffers.correction_bias = d->bias;
    plan->buffers.expert_map = d->map;
    plan->buffers.token_ids = d->token_ids;
    plan->buffers.hash_table = d->table;
}

/* Routes the case through the library and the second implementation;
 * returns the library's plan for further checks (free it). */
static void compare_on(const flavour_case *c, const case_data *d, int check_determinism, host_plan *actual_out) {
    char desc[512];
    describe(c, desc, sizeof desc);
    host_plan expected, actual;
    if (host_plan_alloc(&expected, d->router, 1) != 0 || host_plan_alloc(&actual, d->router, c->optional) != 0)
        fail_msg("%s: host_plan_alloc failed", desc);
    attach_inputs(&actual, d);
    attach_inputs(&expected, d);
    host_plan_poison(&expected);
    host_plan_poison(&actual);

    const alphamoe_status s = alphamoe_route_host(d->router, c->M, d->logits, &actual.buffers);
    if (s != ALPHAMOE_OK) fail_msg("%s: alphamoe_route_host: %s", desc, alphamoe_status_string(s));
    const flavour_call call = {&expected.params, c->M, d->values, d->bias, d->map, d->token_ids, d->table};
    flavour_reference_route(&call, &expected);

    char why[384];
    if (compare_plans(&expected, &actual, c->M, flavour_weight_tolerance(&actual.params), why, sizeof why) != 0)
        fail_msg("%s: %s", desc, why);
    if (validate_plan(&actual, c->M, why, sizeof why) != 0) fail_msg("%s: validate_plan: %s", desc, why);

    if (check_determinism) {
        host_plan again;
        if (host_plan_alloc(&again, d->router, c->optional) != 0) fail_msg("%s: host_plan_alloc failed", desc);
        attach_inputs(&again, d);
        host_plan_poison(&again);
        assert_int_equal(alphamoe_route_host(d->router, c->M, d->logits, &again.buffers), ALPHAMOE_OK);
        if (compare_plans(&actual, &again, c->M, 0.0f, why, sizeof why) != 0)
            fail_msg("%s: two identical calls differ: %s", desc, why);
        host_plan_free(&again);
    }
    host_plan_free(&expected);
    if (actual_out) *actual_out = actual;
    else host_plan_free(&actual);
}

/* ------------------------------------------------------------ brute force */

/* The grouped selection by its definition, checked on a result, with ranks
 * found by counting rather than by selection: when a bias is set the group
 * score is the rounded sum of the keys of the group's experts that have 0
 * and 1 experts of the group ranking before them (its one key for a group
 * of one), else the key of the expert with none; a group is kept when
 * fewer than topk_groups groups rank before it; a kept expert sits in slot
 * j when exactly j kept experts rank before it, and is chosen when j < k. */
static void check_grouped_by_definition(const alphamoe_params *p, const float *row, const float *bias,
                                        const int32_t *ids, const char *desc, int32_t t) {
    const int32_t E = p->num_experts, G = p->num_groups, size = E / G, k = p->top_k;
    const int pair = (p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) != 0;
    float keys[ALPHAMOE_MAX_EXPERTS], score[ALPHAMOE_MAX_EXPERTS];
    for (int32_t e = 0; e < E; ++e) keys[e] = flavour_key(p, row, bias, e);
    for (int32_t g = 0; g < G; ++g) {
        const int32_t b = g * size;
        float first = 0.0f, second = 0.0f;
        for (int32_t i = 0; i < size; ++i) {
            int32_t before = 0;
            for (int32_t j = 0; j < size; ++j) before += flavour_rank_before(keys[b + j], b + j, keys[b + i], b + i) < 0;
            if (before == 0) first = keys[b + i];
            if (before == 1) second = keys[b + i];
        }
        score[g] = pair && size > 1 ? first + second : first;
    }
    int kept[ALPHAMOE_MAX_EXPERTS];
    for (int32_t g = 0; g < G; ++g) {
        int32_t before = 0;
        for (int32_t h = 0; h < G; ++h) before += flavour_rank_before(score[h], h, score[g], g) < 0;
        kept[g] = before < p->topk_groups;
    }
    for (int32_t e = 0; e < E; ++e) {
        if (!kept[e / size]) continue;
        int32_t before = 0;
        for (int32_t c = 0; c < E; ++c) before += kept[c / size] && flavour_rank_before(keys[c], c, keys[e], e) < 0;
        if (before < k && ids[before] != e)
            fail_msg("%s: token %d: by definition expert %d belongs in slot %d, which holds %d", desc, t, e, before,
                     ids[before]);
    }
    for (int32_t j = 0; j < k; ++j)
        if (!kept[ids[j] / size]) fail_msg("%s: token %d: slot %d holds expert %d of a dropped group", desc, t, j, ids[j]);
}

/* ------------------------------------------------------------ drawing cases */

static const int32_t E_LIST[] = {1, 2, 3, 8, 16, 60, 64, 128, 160, 256, 257, 384, 512};
static const int32_t BM_LIST[] = {1, 2, 3, 8, 16, 32, 64, 128, 256};
static const int32_t M_LIST[] = {0, 1, 2, 3, 7, 8, 9, 16, 31, 64, 127, 129, 255, 1000};

/* A divisor of E drawn at random (1 included). */
static int32_t draw_divisor(test_rng *rng, int32_t E) {
    int32_t divisors[64] = {1}, n = 0;
    for (int32_t g = 1; g <= E && n < 64; ++g)
        if (E % g == 0) divisors[n++] = g;
    return divisors[rng_below(rng, (uint32_t)n)];
}

typedef enum flavour_kind {
    KIND_ANY,           /* every field drawn */
    KIND_NO_RENORM,     /* softmax, no renormalization */
    KIND_SCORES,        /* sigmoid or sqrt-softplus, bias or not, renormalized or not */
    KIND_GROUPED,       /* groups > 1 */
    KIND_EP,            /* expert parallelism */
    KIND_TYPED,         /* bf16 / fp16 logits */
    KIND_HASH,          /* hash routing, any scoring */
} flavour_kind;

static flavour_case draw_case(test_rng *rng, flavour_kind kind, int32_t E, int32_t bm, int32_t M) {
    flavour_case c;
    memset(&c, 0, sizeof c);
    c.E = E;
    c.bm = bm;
    c.M = M;
    c.max_tokens = M + (rng_below(rng, 2) ? 0 : (int32_t)rng_below(rng, 50));
    if (c.max_tokens == 0) c.max_tokens = (int32_t)rng_below(rng, 2);
    c.stride = rng_below(rng, 3) == 0 ? E + 1 + (int64_t)rng_below(rng, 40) : 0;
    c.scoring = kind == KIND_SCORES                          ? 1 + (int32_t)rng_below(rng, 2)
                : kind != KIND_NO_RENORM && rng_below(rng, 2) ? (int32_t)rng_below(rng, 3)
                                                             : ALPHAMOE_SCORING_SOFTMAX;
    c.logits_type = kind == KIND_TYPED ? 1 + (int32_t)rng_below(rng, 2)
                    : rng_below(rng, 4) == 0 ? (int32_t)rng_below(rng, 3)
                                             : ALPHAMOE_LOGITS_F32;
    if (kind == KIND_NO_RENORM || rng_below(rng, 2)) c.flags |= ALPHAMOE_FLAG_NO_RENORMALIZE;
    if (c.scoring != ALPHAMOE_SCORING_SOFTMAX && rng_below(rng, 3) != 0) c.flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
    if (rng_below(rng, 2)) c.flags |= ALPHAMOE_FLAG_TAIL_FILL;
    if (rng_below(rng, 4) == 0) c.flags |= ALPHAMOE_FLAG_PDL;
    c.bias = (bias_pattern)rng_below(rng, BIAS_PATTERN_COUNT);

    /* Groups: any divisor of E; kept groups holding at least k experts. */
    c.groups = (kind == KIND_GROUPED || rng_below(rng, 3) == 0) ? draw_divisor(rng, E) : 0;
    if (kind == KIND_GROUPED && c.groups == 1 && E > 1) c.groups = E % 2 == 0 ? 2 : E;
    const int32_t G = c.groups > 1 ? c.groups : 1;
    c.topk_groups = G > 1 ? 1 + (int32_t)rng_below(rng, (uint32_t)G) : (int32_t)rng_below(rng, 2);
    const int32_t eligible = (c.topk_groups > 0 ? c.topk_groups : G) * (E / G);
    c.k = 1 + (int32_t)rng_below(rng, (uint32_t)min_i32(eligible, ALPHAMOE_MAX_TOP_K));
    if (rng_below(rng, 4) == 0) c.topk_groups = 0; /* all groups */

    if (c.scoring == ALPHAMOE_SCORING_SOFTMAX && G == 1 && c.k >= 2 && rng_below(rng, 3) == 0)
        c.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
    /* Hash routing takes no groups, bias or shared expert: a hash case
     * drops them, and an ANY case hashes where none was drawn. */
    const uint32_t unhashable = ALPHAMOE_FLAG_SHARED_EXPERT | ALPHAMOE_FLAG_CORRECTION_BIAS;
    if (kind == KIND_HASH || (kind == KIND_ANY && G == 1 && !(c.flags & unhashable) && rng_below(rng, 4) == 0)) {
        c.flags &= ~unhashable;
        c.groups = 0;
        c.topk_groups = 0;
        c.k = 1 + (int32_t)rng_below(rng, (uint32_t)min_i32(E, ALPHAMOE_MAX_TOP_K));
        c.vocab = 1 + (int32_t)rng_below(rng, rng_below(rng, 2) ? 8 : 5000);
    }
    static const float scales[] = {0.0f, 1.0f, 2.5f, 2.827f, 0.125f, 16.0f, 1e-3f};
    c.scale = rng_below(rng, 2) ? scales[rng_below(rng, COUNT_OF(scales))] : rng_uniform(rng, 0.01f, 8.0f);

    c.ep = kind == KIND_EP ? (ep_mode)(1 + rng_below(rng, 3)) : rng_below(rng, 4) == 0 ? (ep_mode)rng_below(rng, 4) : EP_NONE;
    if (c.ep != EP_NONE) {
        c.ep_count = 1 + (int32_t)rng_below(rng, (uint32_t)E);
        c.ep_begin = c.ep == EP_RANGE ? (int32_t)rng_below(rng, (uint32_t)(E - c.ep_count + 1)) : 0;
    }
    c.optional = (int)rng_below(rng, 2);
    c.pattern = (logit_pattern)rng_below(rng, LOGITS_PATTERN_COUNT);
    return c;
}

static void run_case(test_rng *rng, const flavour_case *c, int check_determinism) {
    case_data d;
    case_data_make(rng, c, &d);
    host_plan actual;
    compare_on(c, &d, check_determinism, &actual);
    if (actual.params.num_groups > 1) {
        char desc[512];
        describe(c, desc, sizeof desc);
        const int64_t stride = actual.params.logits_row_stride;
        for (int32_t t = 0; t < c->M; ++t)
            check_grouped_by_definition(&actual.params, d.values + (int64_t)t * stride, d.bias,
                                        actual.topk_ids + (int64_t)t * c->k, desc, t);
    }
    host_plan_free(&actual);
    case_data_free(&d);
}

static void run_grid(uint64_t salt, flavour_kind kind, int reps) {
    test_rng rng;
    rng_seed_for_test(&rng, salt);
    int cases = 0;
    for (size_t i = 0; i < COUNT_OF(E_LIST); ++i)
        for (size_t j = 0; j < COUNT_OF(BM_LIST); ++j)
            for (int rep = 0; rep < reps; ++rep, ++cases) {
                const int32_t M = M_LIST[rng_below(&rng, COUNT_OF(M_LIST))];
                const flavour_case c = draw_case(&rng, kind, E_LIST[i], BM_LIST[j], M);
                run_case(&rng, &c, rep == 0);
            }
    print_message("# %d cases equal to the second implementation\n", cases);
}

/* ------------------------------------------------------------ the grids */

static void test_no_renormalize(void **state) {
    (void)state;
    run_grid(0xF001, KIND_NO_RENORM, 2);
}

static void test_expert_scores(void **state) {
    (void)state;
    run_grid(0xF002, KIND_SCORES, 3);
}

static void test_grouped_topk(void **state) {
    (void)state;
    run_grid(0xF003, KIND_GROUPED, 2);
}

static void test_expert_parallel(void **state) {
    (void)state;
    run_grid(0xF004, KIND_EP, 2);
}

static void test_hash_routing(void **state) {
    (void)state;
    run_grid(0xF010, KIND_HASH, 2);
}

static void test_logits_types(void **state) {
    (void)state;
    run_grid(0xF005, KIND_TYPED, 2);
}

static void test_any_flavour(void **state) {
    (void)state;
    run_grid(0xF006, KIND_ANY, 3);
}

/* Every logit pattern and every bias pattern with every scoring: NaN,
 * infinities, signed zeros, subnormals and arbitrary bits in logits and
 * biases still give k distinct experts and finite weights in [0, scale]. */
static void test_nonfinite_inputs(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xF007);
    int cases = 0;
    for (int pat = 0; pat < LOGITS_PATTERN_COUNT; ++pat)
        for (int b = 0; b < BIAS_PATTERN_COUNT; ++b)
            for (int kind = KIND_NO_RENORM; kind <= KIND_HASH; ++kind, ++cases) {
                flavour_case c = draw_case(&rng, (flavour_kind)kind, E_LIST[rng_below(&rng, COUNT_OF(E_LIST))],
                                           BM_LIST[rng_below(&rng, COUNT_OF(BM_LIST))],
                                           M_LIST[1 + rng_below(&rng, COUNT_OF(M_LIST) - 1)]);
                c.pattern = (logit_pattern)pat;
                c.bias = (bias_pattern)b;
                run_case(&rng, &c, 0);
            }
    print_message("# %d non-finite cases\n", cases);
}

/* Small shapes, every group count, exhaustively over k and topk_groups,
 * with ties made likely: the brute-force definition decides. */
static void test_grouped_brute_force(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xF008);
    int cases = 0;
    for (int32_t E = 1; E <= 12; ++E)
        for (int32_t G = 1; G <= E; ++G) {
            if (E % G) continue;
            for (int32_t tg = 1; tg <= G; ++tg)
                for (int32_t k = 1; k <= min_i32(tg * (E / G), ALPHAMOE_MAX_TOP_K); ++k)
                    for (int rep = 0; rep < 3; ++rep, ++cases) {
                        flavour_case c = draw_case(&rng, KIND_GROUPED, E, 1 + (int32_t)rng_below(&rng, 8),
                                                   1 + (int32_t)rng_below(&rng, 40));
                        c.groups = G;
                        c.topk_groups = tg;
                        c.k = k;
                        c.flags &= ~ALPHAMOE_FLAG_SHARED_EXPERT;
                        c.scoring = rep == 2 ? ALPHAMOE_SCORING_SOFTMAX : 1 + (int32_t)rng_below(&rng, 2);
                        if (rep == 2) c.flags &= ~ALPHAMOE_FLAG_CORRECTION_BIAS;
                        else c.flags |= rep == 0 ? ALPHAMOE_FLAG_CORRECTION_BIAS : 0u;
                        if (rep == 1) c.flags &= ~ALPHAMOE_FLAG_CORRECTION_BIAS;
                        c.pattern = rng_below(&rng, 2) ? LOGITS_QUANTIZED : (logit_pattern)rng_below(&rng, LOGITS_PATTERN_COUNT);
                        c.bias = rng_below(&rng, 2) ? BIAS_TIES : (bias_pattern)rng_below(&rng, BIAS_PATTERN_COUNT);
                        run_case(&rng, &c, 0);
                    }
        }
    print_message("# %d small grouped cases checked by definition\n", cases);
}

/* Expert parallelism changes the plan only: ids and weights are those of
 * the same router without it, off-rank pairs appear nowhere, and the
 * local plans of a partition of the experts together hold every pair
 * exactly once. */
static void test_expert_parallel_partition(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xF009);
    for (int rep = 0; rep < 60; ++rep) {
        flavour_case c = draw_case(&rng, KIND_ANY, E_LIST[rng_below(&rng, COUNT_OF(E_LIST))],
                                   BM_LIST[rng_below(&rng, COUNT_OF(BM_LIST))], 1 + (int32_t)rng_below(&rng, 300));
        c.ep = EP_NONE;
        c.ep_count = c.ep_begin = 0;
        c.optional = 1;
        case_data whole;
        case_data_make(&rng, &c, &whole);
        host_plan all;
        assert_int_equal(host_plan_alloc(&all, whole.router, 1), 0);
        attach_inputs(&all, &whole);
        host_plan_poison(&all);
        assert_int_equal(alphamoe_route_host(whole.router, c.M, whole.logits, &all.buffers), ALPHAMOE_OK);

        /* Ranks: consecutive ranges, or a random assignment by maps. */
        const int32_t ranks = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(c.E, 8));
        const int by_map = (int)rng_below(&rng, 2);
        int32_t owner[ALPHAMOE_MAX_EXPERTS], begin[9], count[9] = {0};
        for (int32_t r = 0; r <= ranks; ++r) begin[r] = (int32_t)((int64_t)c.E * r / ranks);
        for (int32_t e = 0; e < c.E; ++e) {
            owner[e] = by_map ? (int32_t)rng_below(&rng, (uint32_t)ranks) : 0;
            if (!by_map)
                while (e >= begin[owner[e] + 1]) ++owner[e];
        }
        const int64_t pairs = (int64_t)c.M * c.k;
        int32_t *seen = calloc((size_t)pairs, sizeof *seen);
        assert_non_null(seen);
        for (int32_t r = 0; r < ranks; ++r) {
            int32_t map[ALPHAMOE_MAX_EXPERTS];
            for (int32_t e = 0; e < c.E; ++e) map[e] = owner[e] == r ? count[r]++ : -1;
            if (count[r] == 0) continue;
            alphamoe_params p = case_params(&c);
            if (by_map) p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
            else p.local_expert_begin = begin[r];
            p.local_expert_count = count[r];
            alphamoe_router *rr = NULL;
            assert_int_equal(alphamoe_router_create(&p, &rr), ALPHAMOE_OK);
            host_plan local;
            assert_int_equal(host_plan_alloc(&local, rr, 1), 0);
            attach_inputs(&local, &whole);
            local.buffers.expert_map = map;
            host_plan_poison(&local);
            assert_int_equal(alphamoe_route_host(rr, c.M, whole.logits, &local.buffers), ALPHAMOE_OK);
            char why[384];
            if (validate_plan(&local, c.M, why, sizeof why)) fail_msg("rank %d of %d: %s", r, ranks, why);
            if (memcmp(local.topk_ids, all.topk_ids, (size_t)pairs * 4) != 0)
                fail_msg("rank %d of %d: topk_ids differ from the router without expert parallelism", r, ranks);
            if (memcmp(local.topk_weights, all.topk_weights, (size_t)pairs * 4) != 0)
                fail_msg("rank %d of %d: topk_weights differ from the router without expert parallelism", r, ranks);
            for (int32_t l = 0; l < count[r]; ++l) {
                const int32_t off = local.expert_offsets[l];
                for (int32_t i = 0; i < local.expert_counts[l]; ++i) {
                    const int32_t pair = local.sorted_token_ids[off + i];
                    ++seen[pair];
                    if (owner[all.topk_ids[pair]] != r) fail_msg("rank %d holds pair %d of another rank", r, pair);
                }
            }
            host_plan_free(&local);
            alphamoe_router_destroy(rr);
        }
        /* Every pair once, but a pair of no expert (hash routing), nowhere. */
        for (int64_t i = 0; i < pairs; ++i)
            if (seen[i] != (all.topk_ids[i] >= 0 ? 1 : 0))
                fail_msg("pair %" PRId64 " of expert %d placed %d times over the %d ranks", i, all.topk_ids[i], seen[i],
                         ranks);
        free(seen);
        host_plan_free(&all);
        case_data_free(&whole);
    }
}

/* The scaling factor multiplies every weight and changes nothing else.
 * Unrenormalized sqrt-softplus weights are the scores times the scale,
 * one rounding, at most the largest float: exactly that (an infinite
 * score, unscaled the largest float, stays the largest float). */
static void test_scaling_factor(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xF00A);
    for (int rep = 0; rep < 200; ++rep) {
        flavour_case c = draw_case(&rng, KIND_ANY, E_LIST[rng_below(&rng, COUNT_OF(E_LIST))],
                                   BM_LIST[rng_below(&rng, COUNT_OF(BM_LIST))], 1 + (int32_t)rng_below(&rng, 200));
        const float scale = c.scale == 0.0f ? 1.0f : c.scale;
        c.optional = 1;
        case_data d;
        case_data_make(&rng, &c, &d);
        host_plan scaled;
        compare_on(&c, &d, 0, &scaled);
        flavour_case unit = c;
        unit.scale = 1.0f;
        case_data du = d;
        const alphamoe_params pu = case_params(&unit);
        du.router = NULL;
        assert_int_equal(alphamoe_router_create(&pu, &du.router), ALPHAMOE_OK);
        host_plan plain;
        assert_int_equal(host_plan_alloc(&plain, du.router, 1), 0);
        attach_inputs(&plain, &d);
        host_plan_poison(&plain);
        assert_int_equal(alphamoe_route_host(du.router, c.M, d.logits, &plain.buffers), ALPHAMOE_OK);
        const int64_t pairs = (int64_t)c.M * c.k;
        if (memcmp(plain.topk_ids, scaled.topk_ids, (size_t)pairs * 4) != 0) fail_msg("scale %g changed ids", (double)scale);
        const int exact = c.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS && (c.flags & ALPHAMOE_FLAG_NO_RENORMALIZE);
        for (int64_t i = 0; i < pairs; ++i) {
            const double want = (double)plain.topk_weights[i] * scale;
            const double capped = plain.topk_weights[i] == FLT_MAX ? FLT_MAX : fmin(want, FLT_MAX);
            if (exact ? scaled.topk_weights[i] != (float)capped
                      : !(fabs((double)scaled.topk_weights[i] - want) <= 1e-6 * (scale > 1 ? scale : 1)))
                fail_msg("scale %g: weight %.9g, unscaled %.9g", (double)scale, scaled.topk_weights[i],
                         plain.topk_weights[i]);
        }
        host_plan_free(&plain);
        host_plan_free(&scaled);
        alphamoe_router_destroy(du.router);
        case_data_free(&d);
    }
}

/* ------------------------------------------------------------ worked rows */

typedef struct hand_row {
    const char *name;
    int32_t E, k;
    uint32_t flags;
    int32_t scoring, groups, topk_groups;
    float scale;
    float row[8];
    float bias[8];
    int32_t ids[8];
    double w[8];
    unsigned exact; /* bit j: weight j exactly */
} hand_row;

#define NAN_Q bits_to_float(0x7FC00000u)
#define SIG ALPHAMOE_SCORING_SIGMOID
#define SSP ALPHAMOE_SCORING_SQRT_SOFTPLUS
#define SMX ALPHAMOE_SCORING_SOFTMAX
#define NO_RENORM ALPHAMOE_FLAG_NO_RENORMALIZE
#define BIAS ALPHAMOE_FLAG_CORRECTION_BIAS

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ssp(double x) { return sqrt(log1p(exp(x))); }

static void check_hand_row(test_rng *rng, const hand_row *h) {
    flavour_case c;
    memset(&c, 0, sizeof c);
    c.E = h->E;
    c.k = h->k;
    c.bm = 1 + (int32_t)rng_below(rng, 16);
    c.M = 1 + (int32_t)rng_below(rng, 6);
    c.max_tokens = c.M;
    c.flags = h->flags;
    c.scoring = h->scoring;
    c.groups = h->groups;
    c.topk_groups = h->topk_groups;
    c.scale = h->scale;
    c.optional = 1;
    c.pattern = LOGITS_RANDOM;
    case_data d;
    case_data_make(rng, &c, &d);
    const int32_t at = (int32_t)rng_below(rng, (uint32_t)c.M);
    memcpy((float *)d.logits + (int64_t)at * c.E, h->row, (size_t)c.E * sizeof(float));
    memcpy(d.values + (int64_t)at * c.E, h->row, (size_t)c.E * sizeof(float));
    memcpy(d.bias, h->bias, (size_t)c.E * sizeof(float));
    host_plan actual;
    compare_on(&c, &d, 0, &actual);
    const float tol = flavour_weight_tolerance(&actual.params);
    for (int32_t j = 0; j < c.k; ++j) {
        const int32_t id = actual.topk_ids[(int64_t)at * c.k + j];
        const float w = actual.topk_weights[(int64_t)at * c.k + j];
        if (id != h->ids[j]) fail_msg("%s: slot %d holds expert %d, worked out: %d", h->name, j, id, h->ids[j]);
        const int exact = (h->exact >> j) & 1u;
        if (exact ? w != (float)h->w[j] : !(fabs((double)w - h->w[j]) <= tol))
            fail_msg("%s: slot %d weight %.9g, worked out: %.9g%s", h->name, j, (double)w, h->w[j],
                     exact ? " exactly" : "");
    }
    host_plan_free(&actual);
    case_data_free(&d);
}

static void test_worked_rows(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xF00B);
    const float inf = INFINITY;
    const double third = 1.0 / 3.0;
    const double e1 = exp(1.0);
    /* Full-row softmax of {2, 1, 0, -1}. */
    const double z4 = exp(2.0) + exp(1.0) + 1.0 + exp(-1.0);
    /* Softmax of {3, 2.5, -1}, the kept experts of "softmax groups by max logit". */
    const double z3 = exp(3.0) + exp(2.5) + exp(-1.0);
    const hand_row rows[] = {
        /* no renormalization: the denominator sums all E */
        {"full-row softmax", 4, 2, NO_RENORM, SMX, 0, 0, 0, {2, 1, 0, -1}, {0}, {0, 1}, {exp(2.0) / z4, e1 / z4}, 0},
        {"full-row softmax, equal row", 3, 1, NO_RENORM, SMX, 0, 0, 0, {5, 5, 5}, {0}, {0}, {third}, 0},
        {"full-row softmax, +inf twice", 3, 1, NO_RENORM, SMX, 0, 0, 0, {inf, inf, 0}, {0}, {0}, {0.5}, 1},
        {"full-row softmax, +inf in the shared column", 4, 2, NO_RENORM | ALPHAMOE_FLAG_SHARED_EXPERT, SMX, 0, 0,
         0, {0, 0, 0, inf}, {0}, {0, 3}, {0, 1}, 3},
        {"full-row softmax, shared", 4, 2, NO_RENORM | ALPHAMOE_FLAG_SHARED_EXPERT, SMX, 0, 0, 0, {2, 1, 0, -1},
         {0}, {0, 3}, {exp(2.0) / z4, exp(-1.0) / z4}, 0},
        {"full-row softmax, NaN ignored", 3, 2, NO_RENORM, SMX, 0, 0, 0, {NAN_Q, 1, 1}, {0}, {1, 2}, {0.5, 0.5}, 0},
        {"full-row softmax, all NaN", 2, 1, NO_RENORM, SMX, 0, 0, 0, {NAN_Q, NAN_Q}, {0}, {0}, {0}, 1},
        {"full-row softmax, all -inf", 3, 2, NO_RENORM, SMX, 0, 0, 0, {-inf, -inf, -inf}, {0}, {0, 1}, {0, 0}, 3},
        /* scaling */
        {"renormalized, scaled", 3, 2, 0, SMX, 0, 0, 2.5f, {1, 0, -5}, {0}, {0, 1},
         {2.5 * e1 / (e1 + 1), 2.5 / (e1 + 1)}, 0},
        {"+inf shares, scaled", 3, 2, 0, SMX, 0, 0, 4.0f, {inf, inf, 0}, {0}, {0, 1}, {2, 2}, 3},
        /* sigmoid */
        {"sigmoid renormalized", 3, 2, 0, SIG, 0, 0, 0, {1, -1, 0}, {0}, {0, 2},
         {sig(1) / (sig(1) + 0.5), 0.5 / (sig(1) + 0.5)}, 0},
        {"sigmoid, no renormalization (Llama-4 style)", 4, 1, NO_RENORM, SIG, 0, 0, 0, {1, 3, 3, -2}, {0}, {1},
         {sig(3)}, 0},
        {"sigmoid without bias ranks by logit, not saturated score", 2, 1, NO_RENORM, SIG, 0, 0, 0, {20, 30}, {0},
         {1}, {1}, 1},
        {"sigmoid with bias: saturated scores tie, lower id", 2, 1, NO_RENORM | BIAS, SIG, 0, 0, 0, {20, 30},
         {0, 0}, {0}, {1}, 1},
        {"bias steers, weights unbiased", 3, 2, BIAS, SIG, 0, 0, 0, {2, 0, 1}, {-1, 0.6f, 0}, {1, 2},
         {0.5 / (0.5 + sig(1)), sig(1) / (0.5 + sig(1))}, 0},
        {"bias steers, no renormalization, scaled", 3, 1, BIAS | NO_RENORM, SIG, 0, 0, 2.0f, {2, 0, 1},
         {-1, 0.6f, 0}, {1}, {1.0}, 0},
        {"sigmoid of underflowing logits: weights 0", 3, 2, 0, SIG, 0, 0, 0, {-200, -300, -400}, {0}, {0, 1},
         {0, 0}, 3},
        {"sigmoid: NaN logit last, weighs 0", 2, 2, 0, SIG, 0, 0, 0, {NAN_Q, 0}, {0}, {1, 0}, {1, 0}, 3},
        {"NaN bias ranks last", 3, 2, BIAS, SIG, 0, 0, 0, {5, 0, -5}, {NAN_Q, 0, 0}, {1, 2},
         {0.5 / (0.5 + sig(-5)), sig(-5) / (0.5 + sig(-5))}, 0},
        {"+inf bias ranks first", 3, 1, BIAS | NO_RENORM, SIG, 0, 0, 0, {5, 0, -5}, {0, 0, inf}, {2}, {sig(-5)}, 0},
        /* groups: E=8 in 4 groups of 2, keep 2 */
        {"groups by top-2 sum", 8, 2, BIAS | NO_RENORM, SIG, 4, 2, 0, {0, 0, 0, 0, 0, 0, 0, 0},
         {0.9f, -0.9f, 0.3f, 0.3f, 0.5f, 0, -1, 0.45f}, {4, 2}, {0.5, 0.5}, 3},
        {"groups by max without bias", 8, 2, NO_RENORM, SIG, 4, 2, 0, {3, -9, 1, 1, 2, 0, -1, 2.5f}, {0}, {0, 7},
         {sig(3), sig(2.5)}, 0},
        {"softmax groups by max logit", 8, 3, 0, SMX, 4, 2, 0, {3, -9, 1, 1, 2, 0, -1, 2.5f}, {0}, {0, 7, 6},
         {exp(3.0) / z3, exp(2.5) / z3, exp(-1.0) / z3}, 0},
        {"equal group scores: lower group", 8, 2, BIAS | NO_RENORM, SIG, 4, 1, 0, {0, 0, 0, 0, 0, 0, 0, 0},
         {0.25f, 0.25f, 0.5f, 0, 0, 0.5f, 0, 0}, {0, 1}, {0.5, 0.5}, 3},
        {"group with one non-NaN key ranks last", 4, 2, BIAS | NO_RENORM, SIG, 2, 1, 0, {0, 0, 0, 0},
         {NAN_Q, 5, -1, -1}, {2, 3}, {0.5, 0.5}, 3},
        {"groups of one: their one key", 4, 2, BIAS | NO_RENORM, SIG, 4, 2, 0, {0, 0, 0, 0}, {0.1f, 0.4f, 0.3f, 0},
         {1, 2}, {0.5, 0.5}, 3},
        /* Group 0's two best keys, +inf and -inf, sum to NaN, so group 1
         * (-inf) ranks first; the best of group 0's pair sums (-inf, from
         * two -inf keys) would tie it, and keep group 0 by its index. */
        {"two best keys +inf and -inf: the group scores NaN", 6, 2, BIAS | NO_RENORM, SIG, 2, 1, 0,
         {0, 0, 0, 0, 0, 0}, {inf, -inf, -inf, -inf, -inf, -inf}, {3, 4}, {0.5, 0.5}, 3},
        /* sqrt-softplus */
        {"sqrt-softplus renormalized", 3, 2, 0, SSP, 0, 0, 0, {1, -1, 0}, {0}, {0, 2},
         {ssp(1) / (ssp(1) + ssp(0)), ssp(0) / (ssp(1) + ssp(0))}, 0},
        {"sqrt-softplus, bias steers, weights unbiased, scaled (DeepSeek-V4)", 3, 2, BIAS, SSP, 0, 0, 1.5f,
         {2, 0, 1}, {-1, 0.6f, 0}, {1, 2}, {1.5 * ssp(0) / (ssp(0) + ssp(1)), 1.5 * ssp(1) / (ssp(0) + ssp(1))}, 0},
        {"sqrt-softplus far below: scores stay apart, no 0/0", 2, 2, 0, SSP, 0, 0, 0, {-150, -160}, {0}, {0, 1},
         {1 / (1 + exp(-5.0)), exp(-5.0) / (1 + exp(-5.0))}, 0},
        {"sqrt-softplus of -inf and below -208: weights 0", 3, 2, 0, SSP, 0, 0, 0, {-inf, -300, -inf}, {0}, {1, 0},
         {0, 0}, 3},
        {"sqrt-softplus, +inf scores share", 3, 3, 0, SSP, 0, 0, 0, {inf, 0, inf}, {0}, {0, 2, 1}, {0.5, 0.5, 0}, 7},
        {"sqrt-softplus of +inf unrenormalized: the largest float", 2, 1, NO_RENORM, SSP, 0, 0, 0, {inf, 0}, {0},
         {0}, {FLT_MAX}, 1},
        {"sqrt-softplus past the largest float when scaled", 2, 1, NO_RENORM, SSP, 0, 0, 1e20f, {3e38f, 0}, {0},
         {0}, {FLT_MAX}, 1},
        {"sqrt-softplus unrenormalized: the score times the scale", 2, 2, NO_RENORM, SSP, 0, 0, 2.5f, {40, 1e6f},
         {0}, {1, 0}, {2.5 * 1000.0, 2.5 * (double)sqrtf(40.0f)}, 1},
    };
    for (size_t i = 0; i < COUNT_OF(rows); ++i)
        for (int rep = 0; rep < 6; ++rep) check_hand_row(&rng, &rows[i]);
}

/* Llama-4's router is sigmoid scoring, k = 1 and no renormalization: the
 * expert with the largest logit (lower id on ties, NaN last) and the
 * shared formula's sigmoid of its logit, bit for bit. */
static void test_llama4_router(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xF00C);
    for (int rep = 0; rep < 200; ++rep) {
        const int32_t E = rep % 2 ? 16 : 128, M = 1 + (int32_t)rng_below(&rng, 500);
        alphamoe_params p = test_params(E, 1, 16, M, ALPHAMOE_FLAG_NO_RENORMALIZE);
        p.scoring = ALPHAMOE_SCORING_SIGMOID;
        alphamoe_router *r = NULL;
        assert_int_equal(alphamoe_router_create(&p, &r), ALPHAMOE_OK);
        float *logits = malloc((size_t)M * E * sizeof *logits);
        assert_non_null(logits);
        fill_logits(&rng, logits, M, E, E, (logit_pattern)(rep % LOGITS_PATTERN_COUNT), 0);
        host_plan plan;
        assert_int_equal(host_plan_alloc(&plan, r, 1), 0);
        host_plan_poison(&plan);
        assert_int_equal(alphamoe_route_host(r, M, logits, &plan.buffers), ALPHAMOE_OK);
        for (int32_t t = 0; t < M; ++t) {
            const float *row = logits + (int64_t)t * E;
            int32_t best = 0;
            for (int32_t e = 1; e < E; ++e)
                if (flavour_rank_before(row[e], e, row[best], best) < 0) best = e;
            const float want = isnan(row[best]) ? 0.0f : alphamoe_sigmoid(row[best]);
            if (plan.topk_ids[t] != best || memcmp(&plan.topk_weights[t], &want, 4) != 0)
                fail_msg("token %d: expert %d weight %.9g, Llama-4 rule: expert %d weight %.9g", t, plan.topk_ids[t],
                         plan.topk_weights[t], best, want);
        }
        char why[256];
        if (validate_plan(&plan, M, why, sizeof why)) fail_msg("%s", why);
        host_plan_free(&plan);
        free(logits);
        alphamoe_router_destroy(r);
    }
}

/* Weights of sigmoid and sqrt-softplus scoring against float64 scores,
 * computed with no shared code at all, where scores are far from
 * underflow. */
static void test_score_weights_float64(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xF00D);
    for (int rep = 0; rep < 200; ++rep) {
        const int32_t scoring = rep % 2 ? ALPHAMOE_SCORING_SQRT_SOFTPLUS : ALPHAMOE_SCORING_SIGMOID;
        const int32_t E = E_LIST[rng_below(&rng, COUNT_OF(E_LIST))];
        const int32_t k = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16));
        const int32_t M = 1 + (int32_t)rng_below(&rng, 200);
        const int renorm = (int)rng_below(&rng, 2);
        alphamoe_params p = test_params(E, k, 8, M, renorm ? 0u : ALPHAMOE_FLAG_NO_RENORMALIZE);
        p.scoring = scoring;
        p.routed_scaling_factor = rng_below(&rng, 2) ? 1.0f : 2.5f;
        alphamoe_router *r = NULL;
        assert_int_equal(alphamoe_router_create(&p, &r), ALPHAMOE_OK);
        float *logits = malloc((size_t)M * E * sizeof *logits);
        assert_non_null(logits);
        for (int64_t i = 0; i < (int64_t)M * E; ++i) logits[i] = rng_uniform(&rng, -30.0f, 30.0f);
        host_plan plan;
        assert_int_equal(host_plan_alloc(&plan, r, 0), 0);
        host_plan_poison(&plan);
        assert_int_equal(alphamoe_route_host(r, M, logits, &plan.buffers), ALPHAMOE_OK);
        const double tol = 4e-6 * (p.routed_scaling_factor > 1 ? p.routed_scaling_factor : 1);
        for (int32_t t = 0; t < M; ++t) {
            double s[16], sum = 0.0;
            for (int32_t j = 0; j < k; ++j) {
                const double x = logits[(int64_t)t * E + plan.topk_ids[t * k + j]];
                sum += s[j] = scoring == ALPHAMOE_SCORING_SIGMOID ? sig(x) : sqrt(log1p(exp(x)));
            }
            for (int32_t j = 0; j < k; ++j) {
                const double want = (renorm ? s[j] / sum : s[j]) * p.routed_scaling_factor;
                /* Unrenormalized sqrt-softplus scores reach sqrt(31): the
                 * bound is relative there, 2 ulp of the score. */
                const double bound = renorm || scoring == ALPHAMOE_SCORING_SIGMOID ? tol : 2.5 * want * 0x1p-23;
                if (!(fabs(plan.topk_weights[t * k + j] - want) <= bound))
                    fail_msg("%s token %d slot %d: weight %.9g, float64 %.9g", scoring_name(scoring), t, j,
                             plan.topk_weights[t * k + j], want);
            }
        }
        host_plan_free(&plan);
        free(logits);
        alphamoe_router_destroy(r);
    }
}

/* A caller of the first version knows nothing past force_specialization:
 * whatever its memory holds there, it gets the first version's routing. */
static void test_first_version_caller(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0xF00E);
    for (int rep = 0; rep < 50; ++rep) {
        const int32_t E = E_LIST[rng_below(&rng, COUNT_OF(E_LIST))];
        const int32_t k = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16));
        const int32_t M = 1 + (int32_t)rng_below(&rng, 300);
        alphamoe_params v1 = test_params(E, k, 16, M, k >= 2 && rng_below(&rng, 2) ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u);
        alphamoe_params garbage = v1;
        unsigned char *tail = (unsigned char *)&garbage + offsetof(alphamoe_params, scoring);
        for (size_t i = 0; i < sizeof garbage - offsetof(alphamoe_params, scoring); ++i)
            tail[i] = (unsigned char)rng_next(&rng);
        garbage.struct_size = offsetof(alphamoe_params, scoring);
        alphamoe_router *a = NULL, *b = NULL;
        assert_int_equal(alphamoe_router_create(&v1, &a), ALPHAMOE_OK);
        assert_int_equal(alphamoe_router_create(&garbage, &b), ALPHAMOE_OK);
        float *logits = malloc((size_t)M * E * sizeof *logits);
        assert_non_null(logits);
        fill_logits(&rng, logits, M, E, E, (logit_pattern)(rep % LOGITS_PATTERN_COUNT), 0);
        host_plan pa, pb;
        assert_int_equal(host_plan_alloc(&pa, a, 1), 0);
        assert_int_equal(host_plan_alloc(&pb, b, 1), 0);
        host_plan_poison(&pa);
        host_plan_poison(&pb);
        /* The buffers of a first-version caller end before the bias. */
        pb.buffers.struct_size = offsetof(alphamoe_buffers, correction_bias);
        assert_int_equal(alphamoe_route_host(a, M, logits, &pa.buffers), ALPHAMOE_OK);
        assert_int_equal(alphamoe_route_host(b, M, logits, &pb.buffers), ALPHAMOE_OK);
        char why[256];
        if (compare_plans(&pa, &pb, M, 0.0f, why, sizeof why)) fail_msg("first-version caller: %s", why);
        host_plan_free(&pa);
        host_plan_free(&pb);
        free(logits);
        alphamoe_router_destroy(a);
        alphamoe_router_destroy(b);
    }
}

int main(void) {
    test_base_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_rows),
        cmocka_unit_test(test_llama4_router),
        cmocka_unit_test(test_score_weights_float64),
        cmocka_unit_test(test_first_version_caller),
        cmocka_unit_test(test_no_renormalize),
        cmocka_unit_test(test_expert_scores),
        cmocka_unit_test(test_grouped_topk),
        cmocka_unit_test(test_grouped_brute_force),
        cmocka_unit_test(test_expert_parallel),
        cmocka_unit_test(test_expert_parallel_partition),
        cmocka_unit_test(test_logits_types),
        cmocka_unit_test(test_hash_routing),
        cmocka_unit_test(test_scaling_factor),
        cmocka_unit_test(test_nonfinite_inputs),
        cmocka_unit_test(test_any_flavour),
    };
    return cmocka_run_group_tests_name("flavours", tests, NULL, NULL);
}
