/* Sizing: every extent alphamoe_router_sizes reports, and the plan
 * capacity checked against brute force. The capacity must bound the padded
 * plan length of every routing a max_tokens-sized router can produce, and
 * (contract section 5) be tight. Routings that stress it are built as real
 * logits and run through alphamoe_route_host, whose writes must stay inside
 * the sized buffers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

static int64_t roundup(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static int64_t padded_length(const int32_t *counts, int32_t E, int32_t block_m) {
    int64_t sum = 0;
    for (int32_t e = 0; e < E; ++e) sum += roundup(counts[e], block_m);
    return sum;
}

static alphamoe_router *create_router(int32_t E, int32_t k, int32_t block_m, int32_t max_tokens, uint32_t flags) {
    const alphamoe_params p = test_params(E, k, block_m, max_tokens, flags);
    alphamoe_router *r = NULL;
    const alphamoe_status s = alphamoe_router_create(&p, &r);
    if (s != ALPHAMOE_OK)
        fail_msg("create(E=%d k=%d block_m=%d max_tokens=%d flags=0x%x): %s", E, k, block_m, max_tokens, flags,
                 alphamoe_status_string(s));
    return r;
}

static void check_extent(const char *what, alphamoe_extent x, int64_t want, const char *shape) {
    if (x.elements != want || x.bytes != 4 * want)
        fail_msg("%s: %s = {%" PRId64 " elements, %" PRId64 " bytes}, expected {%" PRId64 ", %" PRId64 "}", shape,
                 what, x.elements, x.bytes, want, 4 * want);
}

/* The workspace as kernels/route_args.h lays it out, in 32-bit words: a
 * header of 64; the large kernel's two exchange sets, each its arrivals (32
 * words), then rows of 512 experts: the sums of 16 CTA groups and the
 * counts of 256 CTAs; then the small kernel's count table, 256 rows of E.
 * In bytes, rounded up to 128: README's "1.1 MB plus 1 KB per expert".
 * Profiling builds add four int64 stamps for each of 256 CTAs. */
static int64_t documented_workspace_bytes(int32_t E) {
    const int64_t exchange_set = 32 + 16 * 512 + 256 * 512;
    int64_t words = 64 + 2 * exchange_set + 256 * (int64_t)E;
#if ALPHAMOE_PHASE_CLOCKS
    words += 256 * 8;
#endif
    return (words * 4 + 127) / 128 * 128;
}

static void check_sizes(int32_t E, int32_t k, int32_t block_m, int32_t max_tokens, uint32_t flags) {
    alphamoe_router *r = create_router(E, k, block_m, max_tokens, flags);
    alphamoe_sizes z;
    memset(&z, 0xEE, sizeof z);
    z.struct_size = sizeof z;
    assert_int_equal(alphamoe_router_sizes(r, &z), ALPHAMOE_OK);
    char shape[128];
    snprintf(shape, sizeof shape, "E=%d k=%d block_m=%d max_tokens=%d flags=0x%x", E, k, block_m, max_tokens, flags);
    const int64_t pairs = (int64_t)max_tokens * k;
    const int64_t cap = formula_capacity(pairs, E, block_m);
    assert_int_equal(z.struct_size, sizeof z);
    check_extent("topk_ids", z.topk_ids, pairs, shape);
    check_extent("topk_weights", z.topk_weights, pairs, shape);
    check_extent("sorted_token_ids", z.sorted_token_ids, cap, shape);
    if (cap % block_m != 0) fail_msg("%s: formula capacity %" PRId64 " not a multiple of block_m", shape, cap);
    check_extent("expert_ids", z.expert_ids, cap / block_m, shape);
    check_extent("num_tokens_post_padded", z.num_tokens_post_padded, 1, shape);
    check_extent("expert_counts", z.expert_counts, E, shape);
    check_extent("expert_offsets", z.expert_offsets, (int64_t)E + 1, shape);
    check_extent("pair_to_sorted", z.pair_to_sorted, pairs, shape);
    const int64_t workspace = documented_workspace_bytes(E);
    if (z.workspace.bytes != workspace || z.workspace.elements != workspace)
        fail_msg("%s: workspace {%" PRId64 ", %" PRId64 "}: want %" PRId64 " bytes", shape, z.workspace.elements,
                 z.workspace.bytes, workspace);
    const int64_t a = z.workspace_alignment;
    if (a < 16 || (a & (a - 1)) != 0) fail_msg("%s: workspace_alignment %" PRId64, shape, a);
    alphamoe_router_destroy(r);
}

static void test_sizes_extents(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x5001);
    static const int32_t corner_E[] = {1, 2, 3, 16, 17, 64, 255, 256, 257, 511, 512};
    static const int32_t corner_bm[] = {1, 2, 3, 7, 16, 64, 128, 255, 256};
    static const int32_t corner_T[] = {0, 1, 2, 3, 5, 16, 100, 4096, 65537, 1000000};
    for (size_t i = 0; i < sizeof corner_E / sizeof corner_E[0]; ++i)
        for (size_t j = 0; j < sizeof corner_bm / sizeof corner_bm[0]; ++j)
            for (size_t t = 0; t < sizeof corner_T / sizeof corner_T[0]; ++t) {
                const int32_t E = corner_E[i];
                const int32_t kmax = min_i32(E, 16);
                check_sizes(E, 1, corner_bm[j], corner_T[t], 0u);
                check_sizes(E, kmax, corner_bm[j], corner_T[t], ALPHAMOE_FLAG_TAIL_FILL);
                if (kmax >= 2)
                    check_sizes(E, 2 + (int32_t)rng_below(&rng, (uint32_t)kmax - 1), corner_bm[j], corner_T[t],
                                ALPHAMOE_FLAG_SHARED_EXPERT);
            }
    for (int i = 0; i < 3000; ++i) {
        const int32_t E = 1 + (int32_t)rng_below(&rng, 512);
        const int32_t k = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16));
        const int32_t bm = 1 + (int32_t)rng_below(&rng, 256);
        /* Up to the largest max_tokens the int32 plan allows. */
        int32_t T;
        switch (rng_below(&rng, 3)) {
        case 0: T = (int32_t)rng_below(&rng, 64); break;
        case 1: T = (int32_t)rng_below(&rng, 1u << 20); break;
        default: {
            int64_t hi = INT32_MAX / k;
            while (formula_capacity(hi * k, E, bm) > INT32_MAX) hi -= 1 + hi / 1000;
            const int64_t v = hi - (int64_t)rng_below(&rng, 1000);
            T = (int32_t)(v < 0 ? 0 : v);
            break;
        }
        }
        uint32_t flags = rng_below(&rng, 2) ? ALPHAMOE_FLAG_TAIL_FILL : 0u;
        if (k >= 2 && rng_below(&rng, 2)) flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
        check_sizes(E, k, bm, T, flags);
    }
}

static void test_sizes_errors(void **state) {
    (void)state;
    alphamoe_router *r = create_router(8, 2, 16, 100, 0u);
    alphamoe_sizes z, before;
    memset(&z, 0x3D, sizeof z);
    z.struct_size = sizeof z - 1;
    before = z;
    assert_int_equal(alphamoe_router_sizes(r, &z), ALPHAMOE_ERROR_STRUCT_SIZE);
    assert_memory_equal(&z, &before, sizeof z);
    z.struct_size = 0;
    before = z;
    assert_int_equal(alphamoe_router_sizes(r, &z), ALPHAMOE_ERROR_STRUCT_SIZE);
    assert_memory_equal(&z, &before, sizeof z);
    z.struct_size = sizeof z;
    before = z;
    assert_int_equal(alphamoe_router_sizes(NULL, &z), ALPHAMOE_ERROR_NULL_POINTER);
    assert_memory_equal(&z, &before, sizeof z);
    assert_int_equal(alphamoe_router_sizes(r, NULL), ALPHAMOE_ERROR_NULL_POINTER);
    alphamoe_router_destroy(r);
}

static void test_sizes_zero_tokens(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x5002);
    for (int i = 0; i < 50; ++i) {
        const int32_t E = 1 + (int32_t)rng_below(&rng, 512);
        const int32_t k = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16));
        const int32_t bm = 1 + (int32_t)rng_below(&rng, 256);
        alphamoe_router *r = create_router(E, k, bm, 0, ALPHAMOE_FLAG_TAIL_FILL);
        alphamoe_sizes z;
        memset(&z, 0xEE, sizeof z);
        z.struct_size = sizeof z;
        assert_int_equal(alphamoe_router_sizes(r, &z), ALPHAMOE_OK);
        assert_int_equal(z.sorted_token_ids.elements, 0);
        assert_int_equal(z.expert_ids.elements, 0);
        assert_int_equal(z.topk_ids.elements, 0);
        assert_int_equal(z.pair_to_sorted.elements, 0);
        assert_int_equal(z.expert_counts.elements, E);
        assert_int_equal(z.expert_offsets.elements, E + 1);
        assert_int_equal(z.workspace.bytes, documented_workspace_bytes(E));
        /* The empty plan fits the empty buffers, tail fill included. */
        host_plan plan;
        assert_int_equal(host_plan_alloc(&plan, r, 1), 0);
        host_plan_poison(&plan);
        assert_int_equal(alphamoe_route_host(r, 0, NULL, &plan.buffers), ALPHAMOE_OK);
        assert_int_equal(plan.num_tokens_post_padded[0], 0);
        for (int g = 0; g < TEST_GUARD; ++g) {
            assert_int_equal(plan.sorted_token_ids[g], TEST_POISON_I32);
            assert_int_equal(plan.expert_ids[g], TEST_POISON_I32);
        }
        host_plan_free(&plan);
        alphamoe_router_destroy(r);
    }
}

/* ------------------------------------------------------------ routings */

/* Turns per-expert pair counts (sum M*k, each at most M) into a routing:
 * pairs are dealt expert by expert, pair i to token i % M in slot i / M, so
 * an expert's run of at most M pairs lands on distinct tokens and every
 * token gets k distinct experts. */
static void realize(const int32_t *counts, int32_t E, int32_t M, int32_t k, int32_t *ids /* [M, k] */) {
    int64_t i = 0;
    for (int32_t e = 0; e < E; ++e)
        for (int32_t c = 0; c < counts[e]; ++c, ++i) ids[(i % M) * k + i / M] = e;
}

/* Logits that make `ids` the exact ranked top-k of each token. */
static void logits_for(test_rng *rng, const int32_t *ids, int32_t E, int32_t M, int32_t k, int shared, float *logits) {
    for (int32_t t = 0; t < M; ++t) {
        float *row = logits + (int64_t)t * E;
        for (int32_t e = 0; e < E; ++e) row[e] = rng_uniform(rng, -90.0f, -10.0f);
        const int32_t routed = shared ? k - 1 : k;
        for (int32_t j = 0; j < routed; ++j) row[ids[(int64_t)t * k + j]] = 100.0f - (float)j;
        /* The shared expert's logit plays no part in selection. */
        if (shared) row[E - 1] = rng_uniform(rng, -200.0f, 200.0f);
    }
}

/* Runs a routing with these counts on a router sized for exactly M tokens
 * and checks that it fits what the sizing promised. Returns the padded
 * length. */
static int64_t route_counts(test_rng *rng, const int32_t *counts_in, int32_t E, int32_t k, int32_t bm, int32_t M,
                            int shared, int tail, const char *kind) {
    char shape[160];
    snprintf(shape, sizeof shape, "%s: E=%d k=%d block_m=%d M=%d shared=%d tail=%d", kind, E, k, bm, M, shared, tail);
    int32_t *counts = calloc((size_t)E, sizeof *counts);
    int32_t *ids = malloc((size_t)M * (size_t)k * sizeof *ids);
    float *logits = malloc((size_t)M * (size_t)E * sizeof *logits);
    assert_true(counts && ids && logits);
    memcpy(counts, counts_in, (size_t)E * sizeof *counts);
    int64_t total = 0;
    for (int32_t e = 0; e < E; ++e) {
        if (counts[e] < 0 || counts[e] > M) fail_msg("%s: count[%d] = %d not in [0, M]", shape, e, counts[e]);
        total += counts[e];
    }
    if (total != (int64_t)M * k) fail_msg("%s: counts sum to %" PRId64 ", not M*k", shape, total);
    if (shared) {
        if (counts[E - 1] != M) fail_msg("%s: shared expert count %d != M", shape, counts[E - 1]);
        int32_t *routed_ids = malloc((size_t)M * (size_t)(k - 1) * sizeof *routed_ids);
        assert_non_null(routed_ids);
        realize(counts, E - 1, M, k - 1, routed_ids);
        for (int32_t t = 0; t < M; ++t) {
            for (int32_t j = 0; j < k - 1; ++j) ids[(int64_t)t * k + j] = routed_ids[(int64_t)t * (k - 1) + j];
            ids[(int64_t)t * k + k - 1] = E - 1;
        }
        free(routed_ids);
    } else {
        realize(counts, E, M, k, ids);
    }
    logits_for(rng, ids, E, M, k, shared, logits);

    uint32_t flags = (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u) | (tail ? ALPHAMOE_FLAG_TAIL_FILL : 0u);
    alphamoe_router *r = create_router(E, k, bm, M, flags);
    host_plan plan;
    assert_int_equal(host_plan_alloc(&plan, r, 1), 0);
    host_plan_poison(&plan);
    const alphamoe_status s = alphamoe_route_host(r, M, logits, &plan.buffers);
    if (s != ALPHAMOE_OK) fail_msg("%s: route_host: %s", shape, alphamoe_status_string(s));

    for (int64_t p = 0; p < (int64_t)M * k; ++p)
        if (plan.topk_ids[p] != ids[p])
            fail_msg("%s: topk_ids[%" PRId64 "] = %d, the logits force %d", shape, p, plan.topk_ids[p], ids[p]);
    char why[256];
    if (validate_plan(&plan, M, why, sizeof why) != 0) fail_msg("%s: %s", shape, why);
    for (int32_t e = 0; e < E; ++e)
        if (plan.expert_counts[e] != counts[e])
            fail_msg("%s: expert_counts[%d] = %d, want %d", shape, e, plan.expert_counts[e], counts[e]);

    const int64_t live = plan.num_tokens_post_padded[0];
    const int64_t want_live = padded_length(counts, E, bm);
    const int64_t cap = formula_capacity((int64_t)M * k, E, bm);
    const int64_t cap_elems = plan.sizes.sorted_token_ids.elements;
    const int64_t blocks_elems = plan.sizes.expert_ids.elements;
    if (live != want_live) fail_msg("%s: live length %" PRId64 ", counts give %" PRId64, shape, live, want_live);
    if (live > cap || live > cap_elems || live / bm > blocks_elems)
        fail_msg("%s: live length %" PRId64 " exceeds capacity %" PRId64 " (sized %" PRId64 ", %" PRId64 " blocks)",
                 shape, live, cap, cap_elems, blocks_elems);
    /* Past the live length: the tail fill when asked for, up to the sized
     * end exactly, then untouched guard. */
    for (int64_t pos = live; pos < cap_elems + TEST_GUARD; ++pos) {
        const int32_t want = (tail && pos < cap_elems) ? (int32_t)((int64_t)M * k) : TEST_POISON_I32;
        if (plan.sorted_token_ids[pos] != want)
            fail_msg("%s: sorted_token_ids[%" PRId64 "] = 0x%x, want 0x%x (live %" PRId64 ", sized %" PRId64 ")",
                     shape, pos, (unsigned)plan.sorted_token_ids[pos], (unsigned)want, live, cap_elems);
    }
    for (int64_t b = live / bm; b < blocks_elems + TEST_GUARD; ++b) {
        const int32_t want = (tail && b < blocks_elems) ? -1 : TEST_POISON_I32;
        if (plan.expert_ids[b] != want)
            fail_msg("%s: expert_ids[%" PRId64 "] = 0x%x, want 0x%x", shape, b, (unsigned)plan.expert_ids[b],
                     (unsigned)want);
    }
    host_plan_free(&plan);
    alphamoe_router_destroy(r);
    free(counts);
    free(ids);
    free(logits);
    return live;
}

/* ------------------------------------------------------------ brute force */

#define BF_MAX_E 6
#define BF_MAX_T 6
#define BF_MAX_K 4
#define BF_MAX_BM 8

typedef struct brute_state {
    int32_t E, cap, bm_max;
    int32_t c[BF_MAX_E];
    int64_t best[BF_MAX_BM + 1];
    int32_t argbest[BF_MAX_BM + 1][BF_MAX_E];
} brute_state;

/* Every composition of `left` pairs into experts e..E-1, each at most cap. */
static void enumerate(brute_state *st, int32_t e, int32_t left) {
    if (e == st->E - 1) {
        if (left > st->cap) return;
        st->c[e] = left;
        for (int32_t bm = 1; bm <= st->bm_max; ++bm) {
            const int64_t len = padded_length(st->c, st->E, bm);
            if (len > st->best[bm]) {
                st->best[bm] = len;
                memcpy(st->argbest[bm], st->c, sizeof st->c);
            }
        }
        return;
    }
    for (int32_t x = 0; x <= left && x <= st->cap; ++x) {
        st->c[e] = x;
        enumerate(st, e + 1, left - x);
    }
}

static void brute(brute_state *st, int32_t E, int32_t pairs, int32_t cap) {
    memset(st, 0, sizeof *st);
    st->E = E;
    st->cap = cap;
    st->bm_max = BF_MAX_BM;
    for (int bm = 0; bm <= BF_MAX_BM; ++bm) st->best[bm] = -1;
    enumerate(st, 0, pairs);
}

/* For every tiny shape: the capacity equals the formula, no distribution a
 * router can produce (any M <= max_tokens, an expert at most once per token)
 * exceeds it, and it is reached: always when the distinct-ids rule does not
 * bind (k == 1, or fewer pairs than experts), and never beyond the maximum
 * of all compositions, which it must equal. The maximising distribution is
 * then routed for real. */
static void test_capacity_brute_force(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x5003);
    int shapes = 0, tight = 0;
    for (int32_t E = 1; E <= BF_MAX_E; ++E)
        for (int32_t k = 1; k <= min_i32(E, BF_MAX_K); ++k)
            for (int32_t T = 0; T <= BF_MAX_T; ++T) {
                const int32_t P = T * k;
                /* Router-producible distributions for every M <= T. */
                int64_t best[BF_MAX_BM + 1];
                int32_t arg[BF_MAX_BM + 1][BF_MAX_E];
                int32_t argM[BF_MAX_BM + 1];
                for (int bm = 0; bm <= BF_MAX_BM; ++bm) best[bm] = -1;
                for (int32_t M = 0; M <= T; ++M) {
                    brute_state st;
                    brute(&st, E, M * k, M);
                    for (int bm = 1; bm <= BF_MAX_BM; ++bm)
                        if (st.best[bm] > best[bm]) {
                            best[bm] = st.best[bm];
                            memcpy(arg[bm], st.argbest[bm], sizeof arg[bm]);
                            argM[bm] = M;
                        }
                }
                /* All compositions of P, ignoring the per-token rule. */
                brute_state free_st;
                brute(&free_st, E, P, P);

                for (int32_t bm = 1; bm <= BF_MAX_BM; ++bm) {
                    ++shapes;
                    alphamoe_router *r = create_router(E, k, bm, T, 0u);
                    alphamoe_sizes z;
                    memset(&z, 0, sizeof z);
                    z.struct_size = sizeof z;
                    assert_int_equal(alphamoe_router_sizes(r, &z), ALPHAMOE_OK);
                    alphamoe_router_destroy(r);
                    const int64_t cap = z.sorted_token_ids.elements;
                    const int64_t formula = formula_capacity(P, E, bm);
                    if (cap != formula)
                        fail_msg("E=%d k=%d max_tokens=%d block_m=%d: capacity %" PRId64 ", formula %" PRId64, E, k, T,
                                 bm, cap, formula);
                    if (best[bm] > cap)
                        fail_msg("E=%d k=%d max_tokens=%d block_m=%d: a routing needs %" PRId64 " > capacity %" PRId64,
                                 E, k, T, bm, best[bm], cap);
                    if (free_st.best[bm] != cap)
                        fail_msg("E=%d k=%d max_tokens=%d block_m=%d: max over all compositions %" PRId64
                                 " != capacity %" PRId64,
                                 E, k, T, bm, free_st.best[bm], cap);
                    if ((k == 1 || P <= E) && best[bm] != cap)
                        fail_msg("E=%d k=%d max_tokens=%d block_m=%d: best routing %" PRId64 " < capacity %" PRId64
                                 " though nothing stops it",
                                 E, k, T, bm, best[bm], cap);
                    tight += best[bm] == cap;
                    if (argM[bm] > 0) {
                        const int64_t live = route_counts(&rng, arg[bm], E, k, bm, argM[bm], 0,
                                                          (int)rng_below(&rng, 2), "brute-force maximum");
                        if (live != best[bm])
                            fail_msg("E=%d k=%d M=%d block_m=%d: routed %" PRId64 ", brute force %" PRId64, E, k,
                                     argM[bm], bm, live, best[bm]);
                    }
                }
            }
    print_message("# capacity brute force: %d shapes, tight in %d\n", shapes, tight);
}

/* ------------------------------------------------------------ adversarial */

enum dist_kind {
    DIST_MAX_PADDING, /* every count = 1 mod block_m as far as the caps allow */
    DIST_ONE_HOT,     /* one expert in every token, the rest spread */
    DIST_ALL_IN_ONE,  /* k == 1: every pair to one expert */
    DIST_UNIFORM,     /* round robin over every expert */
    DIST_FEW,         /* as few experts as possible, each full */
    DIST_RANDOM,
    DIST_COUNT
};

static const char *dist_name(int d) {
    static const char *const names[] = {"max-padding", "one-hot", "all-in-one", "uniform", "few-experts", "random"};
    return names[d];
}

/* Adds `n` pairs to random experts with room (count < cap). */
static void spread_randomly(test_rng *rng, int32_t *counts, int32_t E, int32_t cap, int64_t n) {
    int32_t *open = malloc((size_t)E * sizeof *open);
    assert_non_null(open);
    int32_t n_open = 0;
    for (int32_t e = 0; e < E; ++e)
        if (counts[e] < cap) open[n_open++] = e;
    for (; n > 0; --n) {
        assert_true(n_open > 0);
        const uint32_t i = rng_below(rng, (uint32_t)n_open);
        const int32_t e = open[i];
        if (++counts[e] == cap) open[i] = open[--n_open];
    }
    free(open);
}

/* Counts over E experts for P = M*k pairs, each at most M. Returns 0 when
 * the kind does not apply to the shape. */
static int make_distribution(test_rng *rng, int kind, int32_t E, int32_t k, int32_t bm, int32_t M, int32_t *counts) {
    memset(counts, 0, (size_t)E * sizeof *counts);
    const int64_t P = (int64_t)M * k;
    switch (kind) {
    case DIST_MAX_PADDING: {
        const int64_t n = P < E ? P : E;
        for (int64_t e = 0; e < n; ++e) counts[e] = 1;
        int64_t left = P - n;
        for (int progress = 1; left >= bm && progress;) {
            progress = 0;
            for (int32_t e = 0; e < E && left >= bm; ++e)
                if (counts[e] + bm <= M) {
                    counts[e] += bm;
                    left -= bm;
                    progress = 1;
                }
        }
        /* The remainder goes where it opens no new block when it can. */
        for (int32_t e = 0; e < E && left > 0; ++e) {
            while (left > 0 && counts[e] < M && counts[e] % bm != 0) {
                ++counts[e];
                --left;
            }
        }
        spread_randomly(rng, counts, E, M, left);
        return 1;
    }
    case DIST_ONE_HOT:
        if (k == 1) return 0;
        counts[0] = M;
        spread_randomly(rng, counts, E, M, P - M);
        return 1;
    case DIST_ALL_IN_ONE:
        if (k != 1) return 0;
        counts[0] = M;
        return 1;
    case DIST_UNIFORM:
        for (int64_t i = 0; i < P; ++i) ++counts[i % E];
        return 1;
    case DIST_FEW:
        for (int32_t e = 0; e < k; ++e) counts[e] = M;
        return 1;
    default:
        spread_randomly(rng, counts, E, M, P);
        return 1;
    }
}

static void shuffle(test_rng *rng, int32_t *a, int32_t n) {
    for (int32_t i = n - 1; i > 0; --i) {
        const int32_t j = (int32_t)rng_below(rng, (uint32_t)i + 1);
        const int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

typedef struct shape {
    int32_t E, k, bm, M;
} shape;

static void run_adversarial(test_rng *rng, shape s, int shared) {
    const int32_t Er = shared ? s.E - 1 : s.E; /* experts the routed slots draw from */
    const int32_t kr = shared ? s.k - 1 : s.k;
    int32_t *counts = calloc((size_t)s.E, sizeof *counts);
    assert_non_null(counts);
    for (int kind = 0; kind < DIST_COUNT; ++kind) {
        if (!make_distribution(rng, kind, Er, kr, s.bm, s.M, counts)) continue;
        const int64_t designed = padded_length(counts, Er, s.bm);
        /* Which expert gets which count is arbitrary: shuffle the ids. */
        shuffle(rng, counts, Er);
        if (shared) counts[s.E - 1] = s.M;
        const int64_t live = route_counts(rng, counts, s.E, s.k, s.bm, s.M, shared, (int)rng_below(rng, 2),
                                          dist_name(kind));
        const int64_t cap = formula_capacity((int64_t)s.M * s.k, s.E, s.bm);
        /* Where the per-expert cap leaves room, the routing reaches the
         * capacity: the bound is tight on real logits. */
        if (kind == DIST_MAX_PADDING && !shared && designed == cap && live != cap)
            fail_msg("max-padding E=%d k=%d block_m=%d M=%d: live %" PRId64 " != capacity %" PRId64, s.E, s.k, s.bm,
                     s.M, live, cap);
        if (kind == DIST_MAX_PADDING && !shared && (s.k == 1 || (int64_t)s.M * s.k <= s.E) && live != cap)
            fail_msg("max-padding E=%d k=%d block_m=%d M=%d: live %" PRId64 " never reaches capacity %" PRId64,
                     s.E, s.k, s.bm, s.M, live, cap);
    }
    free(counts);
}

static void test_capacity_adversarial(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x5004);
    const shape fixed[] = {
        {512, 2, 16, 3},    /* E > P */
        {512, 16, 256, 7},  /* E > P, block_m > P */
        {64, 4, 16, 16},    /* E == P */
        {32, 1, 8, 32},     /* E == P, k == 1 */
        {60, 4, 1, 500},    /* block_m == 1: capacity == P */
        {1, 1, 1, 1000},
        {8, 2, 256, 10},    /* block_m > P */
        {3, 2, 200, 50},    /* block_m > P, few experts */
        {60, 4, 16, 500},
        {256, 8, 64, 2000},
        {3, 2, 5, 100},
        {1, 1, 7, 50},      /* one expert: everything in one group */
        {2, 1, 3, 301},
        {160, 6, 128, 333},
        {512, 16, 256, 40},
        {16, 16, 3, 77},    /* k == E: every token takes every expert */
        {128, 8, 32, 4096},
        {257, 9, 33, 1000},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; ++i) {
        run_adversarial(&rng, fixed[i], 0);
        if (fixed[i].k >= 2) run_adversarial(&rng, fixed[i], 1);
    }
    for (int i = 0; i < 150; ++i) {
        shape s;
        s.E = 1 + (int32_t)rng_below(&rng, 512);
        s.k = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(s.E, 16));
        s.bm = 1 + (int32_t)rng_below(&rng, 256);
        s.M = 1 + (int32_t)rng_below(&rng, rng_below(&rng, 4) ? 200 : 3000);
        run_adversarial(&rng, s, 0);
        if (s.k >= 2) run_adversarial(&rng, s, 1);
    }
}

/* ------------------------------------------------------------ expert parallelism */

/* With L local experts the plan is sized for L groups: expert_counts [L],
 * expert_offsets [L + 1], and the capacity formula with L for E; token-
 * shaped outputs stay [max_tokens, k]. */
static void test_sizes_expert_parallel(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x5005);
    for (int i = 0; i < 3000; ++i) {
        const int32_t E = 1 + (int32_t)rng_below(&rng, 512);
        const int32_t k = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16));
        const int32_t bm = 1 + (int32_t)rng_below(&rng, 256);
        const int32_t T = rng_below(&rng, 4) ? (int32_t)rng_below(&rng, 5000) : (int32_t)rng_below(&rng, 1u << 22);
        const int32_t L = 1 + (int32_t)rng_below(&rng, (uint32_t)E);
        alphamoe_params p = test_params(E, k, bm, T, rng_below(&rng, 2) ? ALPHAMOE_FLAG_TAIL_FILL : 0u);
        if (rng_below(&rng, 2)) {
            p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        } else {
            p.local_expert_begin = (int32_t)rng_below(&rng, (uint32_t)(E - L + 1));
        }
        p.local_expert_count = L;
        alphamoe_router *r = NULL;
        const alphamoe_status st = alphamoe_router_create(&p, &r);
        if (st != ALPHAMOE_OK) fail_msg("create(E=%d L=%d k=%d bm=%d T=%d): %s", E, L, k, bm, T, alphamoe_status_string(st));
        alphamoe_sizes z;
        memset(&z, 0xEE, sizeof z);
        z.struct_size = sizeof z;
        assert_int_equal(alphamoe_router_sizes(r, &z), ALPHAMOE_OK);
        char shape[160];
        snprintf(shape, sizeof shape, "E=%d L=%d k=%d block_m=%d max_tokens=%d %s", E, L, k, bm, T,
                 (p.flags & ALPHAMOE_FLAG_EXPERT_MAP) ? "map" : "range");
        const int64_t pairs = (int64_t)T * k;
        const int64_t cap = formula_capacity(pairs, L, bm);
        check_extent("topk_ids", z.topk_ids, pairs, shape);
        check_extent("topk_weights", z.topk_weights, pairs, shape);
        check_extent("pair_to_sorted", z.pair_to_sorted, pairs, shape);
        check_extent("sorted_token_ids", z.sorted_token_ids, cap, shape);
        check_extent("expert_ids", z.expert_ids, cap / bm, shape);
        check_extent("expert_counts", z.expert_counts, L, shape);
        check_extent("expert_offsets", z.expert_offsets, (int64_t)L + 1, shape);
        check_extent("num_tokens_post_padded", z.num_tokens_post_padded, 1, shape);
        /* Counts for all E global experts, whatever L. */
        if (z.workspace.bytes != documented_workspace_bytes(E) || z.workspace.elements != z.workspace.bytes)
            fail_msg("%s: workspace %" PRId64 " bytes, want %" PRId64, shape, z.workspace.bytes,
                     documented_workspace_bytes(E));
        alphamoe_router_destroy(r);
    }
}

/* Routings under expert parallelism stay inside the sized plan, and the
 * bound is reached: a map sending every global expert to local expert 0
 * puts all M*k pairs in one group of roundup(M*k, block_m), which is the
 * capacity for L = 1. */
static void test_capacity_expert_parallel(void **state) {
    (void)state;
    test_rng rng;
    rng_seed_for_test(&rng, 0x5006);
    for (int i = 0; i < 300; ++i) {
        const int32_t E = 1 + (int32_t)rng_below(&rng, 512);
        const int32_t k = 1 + (int32_t)rng_below(&rng, (uint32_t)min_i32(E, 16));
        const int32_t bm = 1 + (int32_t)rng_below(&rng, 256);
        const int32_t M = 1 + (int32_t)rng_below(&rng, 400);
        const int all_to_one = i % 3 == 0;
        const int32_t L = all_to_one ? 1 : 1 + (int32_t)rng_below(&rng, (uint32_t)E);
        alphamoe_params p = test_params(E, k, bm, M, ALPHAMOE_FLAG_TAIL_FILL | ALPHAMOE_FLAG_EXPERT_MAP);
        p.local_expert_count = L;
        int32_t map[ALPHAMOE_MAX_EXPERTS];
        for (int32_t e = 0; e < E; ++e) map[e] = all_to_one ? 0 : (int32_t)rng_below(&rng, (uint32_t)L + 1) - 1;
        alphamoe_router *r = NULL;
        assert_int_equal(alphamoe_router_create(&p, &r), ALPHAMOE_OK);
        float *logits = malloc((size_t)M * (size_t)E * sizeof *logits);
        assert_non_null(logits);
        fill_logits(&rng, logits, M, E, E, rng_below(&rng, 2) ? LOGITS_RANDOM : LOGITS_QUANTIZED, 0);
        host_plan plan;
        assert_int_equal(host_plan_alloc(&plan, r, 1), 0);
        plan.buffers.expert_map = map;
        host_plan_poison(&plan);
        assert_int_equal(alphamoe_route_host(r, M, logits, &plan.buffers), ALPHAMOE_OK);
        char why[256];
        if (validate_plan(&plan, M, why, sizeof why)) fail_msg("E=%d L=%d k=%d bm=%d M=%d: %s", E, L, k, bm, M, why);
        const int64_t live = plan.num_tokens_post_padded[0];
        const int64_t cap = plan.sizes.sorted_token_ids.elements;
        if (live > cap) fail_msg("E=%d L=%d k=%d bm=%d M=%d: live %" PRId64 " > capacity %" PRId64, E, L, k, bm, M, live, cap);
        if (all_to_one && live != cap)
            fail_msg("E=%d k=%d bm=%d M=%d, every expert local 0: live %" PRId64 " != capacity %" PRId64, E, k, bm, M,
                     live, cap);
        /* Tail fill up to the capacity sized with L, then untouched. */
        for (int64_t pos = live; pos < cap + TEST_GUARD; ++pos) {
            const int32_t want = pos < cap ? M * k : TEST_POISON_I32;
            if (plan.sorted_token_ids[pos] != want)
                fail_msg("E=%d L=%d: sorted_token_ids[%" PRId64 "] = %d, want %d", E, L, pos, plan.sorted_token_ids[pos], want);
        }
        host_plan_free(&plan);
        free(logits);
        alphamoe_router_destroy(r);
    }
}

int main(void) {
    test_base_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_extents),
        cmocka_unit_test(test_sizes_errors),
        cmocka_unit_test(test_sizes_zero_tokens),
        cmocka_unit_test(test_capacity_brute_force),
        cmocka_unit_test(test_capacity_adversarial),
        cmocka_unit_test(test_sizes_expert_parallel),
        cmocka_unit_test(test_capacity_expert_parallel),
    };
    return cmocka_run_group_tests_name("sizing", tests, NULL, NULL);
}
