#include "test_support.h"

#include "logit_classes.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void rng_seed(test_rng *rng, uint64_t seed) { rng->state = seed; }

uint64_t rng_next(test_rng *rng) {
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t rng_below(test_rng *rng, uint32_t n) { return n ? (uint32_t)(rng_next(rng) % n) : 0u; }

float rng_uniform(test_rng *rng, float lo, float hi) {
    const double u = (double)(rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

uint64_t test_base_seed(void) {
    static int printed = 0;
    static uint64_t seed = 0;
    if (!printed) {
        const char *env = getenv("ALPHAMOE_TEST_SEED");
        if (env && *env) {
            seed = strtoull(env, NULL, 0);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
        }
        printf("# random seed: ALPHAMOE_TEST_SEED=0x%016" PRIx64 "\n", seed);
        fflush(stdout);
        printed = 1;
    }
    return seed;
}

void rng_seed_for_test(test_rng *rng, uint64_t salt) { rng_seed(rng, test_base_seed() ^ salt); }

int test_shard(int *count) {
    *count = 1;
    const char *env = getenv("ALPHAMOE_TEST_SHARD");
    if (!env || !*env) return 0;
    int i = 0, n = 0;
    char tail = 0;
    if (sscanf(env, "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || i < 1 || i > n) {
        printf("ALPHAMOE_TEST_SHARD=%s: expected i/n with 1 <= i <= n\n", env);
        return -1;
    }
    printf("# shard %d of %d (ALPHAMOE_TEST_SHARD)\n", i, n);
    *count = n;
    return i - 1;
}

float bits_to_float(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

const char *scoring_name(int32_t scoring) {
    switch (scoring) {
    case ALPHAMOE_SCORING_SOFTMAX: return "softmax";
    case ALPHAMOE_SCORING_SIGMOID: return "sigmoid";
    case ALPHAMOE_SCORING_SQRT_SOFTPLUS: return "sqrt-softplus";
    default: return "?";
    }
}

const char *logit_pattern_name(logit_pattern pattern) {
    switch (pattern) {
    case LOGITS_RANDOM: return "random";
    case LOGITS_QUANTIZED: return "quantized";
    case LOGITS_ONE_HOT: return "one-hot";
    case LOGITS_ALL_EQUAL: return "all-equal";
    case LOGITS_NONFINITE: return "non-finite";
    case LOGITS_RANDOM_BITS: return "random-bits";
    case LOGITS_ROW_CLASSES: return "row-classes";
    case LOGITS_HOT_LANE: return "hot-lane";
    case LOGITS_TOP_TIES: return "top-ties";
    default: return "?";
    }
}

static float special_value(test_rng *rng) {
    switch (rng_below(rng, 10)) {
    case 0: return bits_to_float(0x7FC00000u | rng_below(rng, 0x400000u)); /* quiet NaN */
    case 1: return bits_to_float(0xFF800001u + rng_below(rng, 0x3FFFFFu)); /* negative NaN */
    case 2: return INFINITY;
    case 3: return -INFINITY;
    case 4: return -0.0f;
    case 5: return 0.0f;
    case 6: return bits_to_float(1u + rng_below(rng, 0x7FFFFFu)); /* positive denormal */
    case 7: return bits_to_float(0x80000001u + rng_below(rng, 0x7FFFFFu)); /* negative denormal */
    default: return rng_uniform(rng, -4.0f, 4.0f);
    }
}

/* A row whose largest logits sit on one lane's experts l, l + 32, ...
 * (the kernels hold expert e in lane e % 32): 4 or more of them where the
 * row has them, above one logit in each other pair of lanes (l', l' + 16)
 * and far above the rest. The kernels' bound on the chosen keys then lets
 * few candidates through (at most 31), and that lane holds 4 or more of
 * them: the rankings' count of candidates takes its wide path. */
static void fill_hot_lane_row(test_rng *rng, float *row, int32_t E) {
    for (int32_t e = 0; e < E; ++e) row[e] = rng_uniform(rng, -60.0f, -40.0f);
    const int32_t lane = (int32_t)rng_below(rng, 32);
    const int32_t lane_experts = (E - lane + 31) / 32;
    const int32_t hot = lane_experts < 4 ? lane_experts
                                         : 4 + (int32_t)rng_below(rng, (uint32_t)(lane_experts - 3));
    for (int32_t i = 0; i < hot; ++i) row[lane + 32 * i] = rng_uniform(rng, 100.0f, 150.0f);
    for (int32_t pair = 0; pair < 16; ++pair) {
        if (pair == lane % 16) continue;
        const int32_t other = pair + 16 * (int32_t)rng_below(rng, 2);
        const int32_t other_experts = (E - other + 31) / 32;
        if (other_experts > 0)
            row[other + 32 * (int32_t)rng_below(rng, (uint32_t)other_experts)] = rng_uniform(rng, 50.0f, 90.0f);
    }
}

/* A row whose largest logits come in 2 to 4 groups of equal values, 2 to
 * 5 experts each, above the rest; in a quarter of the rows one group is of
 * zeros, each -0.0 or +0.0 (equal), the others then around them. Few
 * candidates pass the kernels' bound (at most 32), equal ones among them,
 * so the rankings must order equal candidates by id, and the top k often
 * ends inside a group. */
static void fill_top_ties_row(test_rng *rng, float *row, int32_t E) {
    const int zeros = rng_below(rng, 4) == 0;
    for (int32_t e = 0; e < E; ++e) row[e] = zeros ? rng_uniform(rng, -16.0f, -8.0f) : rng_uniform(rng, -8.0f, 8.0f);
    const int groups = 2 + (int)rng_below(rng, 3);
    for (int g = 0; g < groups; ++g) {
        const int zero_group = zeros && g == 0;
        const float value = zeros ? rng_uniform(rng, -4.0f, 4.0f) : rng_uniform(rng, 8.0f, 12.0f);
        const int members = 2 + (int)rng_below(rng, 4);
        for (int i = 0; i < members; ++i)
            row[rng_below(rng, (uint32_t)E)] = zero_group ? (rng_below(rng, 2) ? -0.0f : 0.0f) : value;
    }
}

void fill_logits(test_rng *rng, float *logits, int32_t M, int32_t E, int64_t stride,
                 logit_pattern pattern, int32_t hot) {
    for (int32_t t = 0; t < M; ++t) {
        float *row = logits + (int64_t)t * stride;
        if (pattern == LOGITS_ROW_CLASSES || pattern == LOGITS_HOT_LANE || pattern == LOGITS_TOP_TIES) {
            if (pattern == LOGITS_ROW_CLASSES)
                fill_row_of_class(rng, row, E, (logit_row_class)rng_below(rng, ROW_CLASS_COUNT));
            else if (pattern == LOGITS_HOT_LANE)
                fill_hot_lane_row(rng, row, E);
            else
                fill_top_ties_row(rng, row, E);
            for (int64_t e = E; e < stride; ++e) row[e] = bits_to_float(0x7FC0BEEFu);
            continue;
        }
        const float row_value = rng_uniform(rng, -3.0f, 3.0f);
        const int levels = 1 + (int)rng_below(rng, 4);
        for (int32_t e = 0; e < E; ++e) {
            float v;
            switch (pattern) {
            case LOGITS_QUANTIZED: v = (float)rng_below(rng, (uint32_t)levels) * 0.5f - 1.0f; break;
            case LOGITS_ONE_HOT: v = e == hot ? 50.0f : rng_uniform(rng, -8.0f, 8.0f); break;
            case LOGITS_ALL_EQUAL: v = row_value; break;
            case LOGITS_NONFINITE: v = special_value(rng); break;
            case LOGITS_RANDOM_BITS: v = bits_to_float((uint32_t)rng_next(rng)); break;
            default: v = rng_uniform(rng, -8.0f, 8.0f); break;
            }
            row[e] = v;
        }
        for (int64_t e = E; e < stride; ++e) row[e] = bits_to_float(0x7FC0BEEFu);
    }
}

/* ---------------------------------------------------------------- plans */

static void *alloc_guarded(int64_t elements) {
    return malloc((size_t)(elements + TEST_GUARD) * 4u);
}

int host_plan_alloc(host_plan *plan, const alphamoe_router *router, int with_optional) {
    memset(plan, 0, sizeof *plan);
    plan->params.struct_size = sizeof plan->params;
    plan->sizes.struct_size = sizeof plan->sizes;
    if (alphamoe_router_get_params(router, &plan->params) != ALPHAMOE_OK) return -1;
    if (alphamoe_router_sizes(router, &plan->sizes) != ALPHAMOE_OK) return -1;
    const alphamoe_sizes *z = &plan->sizes;
    plan->topk_ids = alloc_guarded(z->topk_ids.elements);
    plan->topk_weights = alloc_guarded(z->topk_weights.elements);
    plan->sorted_token_ids = alloc_guarded(z->sorted_token_ids.elements);
    plan->expert_ids = alloc_guarded(z->expert_ids.elements);
    plan->num_tokens_post_padded = alloc_guarded(1);
    if (with_optional) {
        plan->expert_counts = alloc_guarded(z->expert_counts.elements);
        plan->expert_offsets = alloc_guarded(z->expert_offsets.elements);
        plan->pair_to_sorted = alloc_guarded(z->pair_to_sorted.elements);
    }
    if (!plan->topk_ids || !plan->topk_weights || !plan->sorted_token_ids || !plan->expert_ids ||
        !plan->num_tokens_post_padded ||
        (with_optional && (!plan->expert_counts || !plan->expert_offsets || !plan->pair_to_sorted))) {
        host_plan_free(plan);
        return -1;
    }
    alphamoe_buffers *b = &plan->buffers;
    b->struct_size = sizeof *b;
    b->topk_ids = plan->topk_ids;
    b->topk_weights = plan->topk_weights;
    b->sorted_token_ids = plan->sorted_token_ids;
    b->expert_ids = plan->expert_ids;
    b->num_tokens_post_padded = plan->num_tokens_post_padded;
    b->expert_counts = plan->expert_counts;
    b->expert_offsets = plan->expert_offsets;
    b->pair_to_sorted = plan->pair_to_sorted;
    b->sorted_token_ids_capacity = z->sorted_token_ids.elements;
    b->expert_ids_capacity = z->expert_ids.elements;
    b->workspace = NULL;
    b->workspace_bytes = 0;
    return 0;
}

static void poison_i32(int32_t *p, int64_t elements) {
    if (!p) return;
    for (int64_t i = 0; i < elements + TEST_GUARD; ++i) p[i] = TEST_POISON_I32;
}

void host_plan_poison(host_plan *plan) {
    const alphamoe_sizes *z = &plan->sizes;
    poison_i32(plan->topk_ids, z->topk_ids.elements);
    const uint32_t nan_bits = TEST_POISON_F32_BITS;
    for (int64_t i = 0; i < z->topk_weights.elements + TEST_GUARD; ++i)
        memcpy(&plan->topk_weights[i], &nan_bits, 4);
    poison_i32(plan->sorted_token_ids, z->sorted_token_ids.elements);
    poison_i32(plan->expert_ids, z->expert_ids.elements);
    poison_i32(plan->num_tokens_post_padded, 1);
    poison_i32(plan->expert_counts, z->expert_counts.elements);
    poison_i32(plan->expert_offsets, z->expert_offsets.elements);
    poison_i32(plan->pair_to_sorted, z->pair_to_sorted.elements);
}

void host_plan_free(host_plan *plan) {
    free(plan->topk_ids);
    free(plan->topk_weights);
    free(plan->sorted_token_ids);
    free(plan->expert_ids);
    free(plan->num_tokens_post_padded);
    free(plan->expert_counts);
    free(plan->expert_offsets);
    free(plan->pair_to_sorted);
    memset(plan, 0, sizeof *plan);
}

static int fail(char *why, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return -1;
}

float plan_max_weight(const host_plan *plan) {
    /* Unrenormalized sqrt-softplus scores have no bound but the largest
     * float; every other weight is at most the scale. */
    if (plan->params.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS &&
        (plan->params.flags & ALPHAMOE_FLAG_NO_RENORMALIZE))
        return FLT_MAX;
    const float scale = plan->params.routed_scaling_factor;
    return scale > 0.0f ? scale : 1.0f;
}

void plan_local_ids(const host_plan *plan, int32_t *local_of) {
    const alphamoe_params *p = &plan->params;
    const int32_t L = p->local_expert_count > 0 ? p->local_expert_count : plan_routed_experts(p);
    for (int32_t g = 0; g < plan_routed_experts(p); ++g) {
        int32_t local = g - p->local_expert_begin;
        if (p->flags & ALPHAMOE_FLAG_EXPERT_MAP) local = plan->buffers.expert_map[g];
        local_of[g] = local >= 0 && local < L ? local : -1;
    }
}

/* Elements [from, to) of `a` must equal `b` ([from, live)) and then be
 * poison up to `end` (tail elements get `tail` when tail_value is set). */
static int compare_i32(const char *what, const int32_t *expected, const int32_t *actual, int64_t live,
                       int64_t allocated, int has_tail, int32_t tail, char *why, size_t size) {
    for (int64_t i = 0; i < live; ++i)
        if (expected[i] != actual[i])
            return fail(why, size, "%s[%" PRId64 "]: expected %d, got %d", what, i, expected[i], actual[i]);
    for (int64_t i = live; i < allocated + TEST_GUARD; ++i) {
        const int32_t want = (has_tail && i < allocated) ? tail : TEST_POISON_I32;
        if (actual[i] != want)
            return fail(why, size, "%s[%" PRId64 "] (live length %" PRId64 ", allocated %" PRId64
                        "): expected %s 0x%08x, got 0x%08x", what, i, live, allocated,
                        want == TEST_POISON_I32 ? "untouched" : "tail fill", (unsigned)want, (unsigned)actual[i]);
    }
    return 0;
}

int compare_plans(const host_plan *expected, const host_plan *actual, int32_t M, float weight_tol,
                  char *why, size_t why_size) {
    const alphamoe_params *p = &actual->params;
    const alphamoe_sizes *z = &actual->sizes;
    const int64_t pairs = (int64_t)M * p->top_k;
    const int32_t sentinel = (int32_t)pairs;
    const int tail = M > 0 && (p->flags & ALPHAMOE_FLAG_TAIL_FILL) != 0;
    const int32_t live = M > 0 ? *expected->num_tokens_post_padded : 0;
    const float max_weight = plan_max_weight(actual);

    if (*actual->num_tokens_post_padded != live)
        return fail(why, why_size, "num_tokens_post_padded: expected %d, got %d", live,
                    *actual->num_tokens_post_padded);
    if (compare_i32("num_tokens_post_padded", expected->num_tokens_post_padded,
                    actual->num_tokens_post_padded, 1, 1, 0, 0, why, why_size))
        return -1;
    if (compare_i32("topk_ids", expected->topk_ids, actual->topk_ids, pairs, z->topk_ids.elements, 0, 0,
                    why, why_size))
        return -1;
    for (int64_t i = 0; i < z->topk_weights.elements + TEST_GUARD; ++i) {
        const float a = actual->topk_weights[i];
        if (i < pairs) {
            const float e = expected->topk_weights[i];
            if (!(a >= 0.0f && a <= max_weight) || !(fabsf(a - e) <= weight_tol))
                return fail(why, why_size, "topk_weights[%" PRId64 "]: expected %.9g, got %.9g", i, e, a);
        } else {
            uint32_t bits;
            memcpy(&bits, &a, 4);
            if (bits != TEST_POISON_F32_BITS)
                return fail(why, why_size, "topk_weights[%" PRId64 "] past M*k was written", i);
        }
    }
    if (compare_i32("sorted_token_ids", expected->sorted_token_ids, actual->sorted_token_ids, live,
                    z->sorted_token_ids.elements, tail, sentinel, why, why_size))
        return -1;
    if (compare_i32("expert_ids", expected->expert_ids, actual->expert_ids, live / p->block_m,
                    z->expert_ids.elements, tail, -1, why, why_size))
        return -1;
    const int64_t L = p->local_expert_count;
    if (actual->expert_counts &&
        compare_i32("expert_counts", expected->expert_counts, actual->expert_counts, M > 0 ? L : 0,
                    z->expert_counts.elements, 0, 0, why, why_size))
        return -1;
    if (actual->expert_offsets &&
        compare_i32("expert_offsets", expected->expert_offsets, actual->expert_offsets, M > 0 ? L + 1 : 0,
                    z->expert_offsets.elements, 0, 0, why, why_size))
        return -1;
    if (actual->pair_to_sorted &&
        compare_i32("pair_to_sorted", expected->pair_to_sorted, actual->pair_to_sorted, pairs,
                    z->pair_to_sorted.elements, 0, 0, why, why_size))
        return -1;
    return 0;
}

int validate_plan(const host_plan *plan, int32_t M, char *why, size_t why_size) {
    const alphamoe_params *p = &plan->params;
    const int32_t E = plan_routed_experts(p), k = p->top_k, bm = p->block_m, L = p->local_expert_count;
    /* Replica tables may send the shared expert's pair anywhere, two pairs
     * of a token to one physical expert, or a pair nowhere (-1), keeping
     * its weight. */
    const int replicas = (p->flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) != 0;
    const int shared = (p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) != 0 && !replicas;
    /* Hash routing's table may repeat an expert in a row, or name none (-1). */
    const int hashed = (p->flags & ALPHAMOE_FLAG_HASH_ROUTING) != 0 || replicas;
    const float max_weight = plan_max_weight(plan);
    const int64_t pairs = (int64_t)M * k;
    if (M == 0) {
        if (*plan->num_tokens_post_padded != 0) return fail(why, why_size, "M == 0 but live length != 0");
        return 0;
    }
    int32_t local_of[ALPHAMOE_MAX_EXPERTS];
    plan_local_ids(plan, local_of);
    int64_t *count = calloc((size_t)L + 1, sizeof *count);
    int64_t *offset = calloc((size_t)L + 2, sizeof *offset);
    int rc = 0;
    if (!count || !offset) {
        rc = fail(why, why_size, "out of memory");
        goto done;
    }
    for (int32_t t = 0; t < M && rc == 0; ++t) {
        for (int32_t j = 0; j < k && rc == 0; ++j) {
            const int64_t pair = (int64_t)t * k + j;
            const int32_t id = plan->topk_ids[pair];
            const float w = plan->topk_weights[pair];
            if (hashed && id == -1) {
                if (replicas ? !(w >= 0.0f && w <= max_weight) : w != 0.0f)
                    rc = fail(why, why_size, "token %d slot %d: no expert, weight %g", t, j, w);
                else if (plan->pair_to_sorted && plan->pair_to_sorted[pair] != -1)
                    rc = fail(why, why_size, "pair %" PRId64 " of no expert: pair_to_sorted %d", pair,
                              plan->pair_to_sorted[pair]);
                continue;
            }
            if (id < 0 || id >= E) rc = fail(why, why_size, "token %d slot %d: id %d out of range", t, j, id);
            else if (shared && j == k - 1 && id != E - 1) rc = fail(why, why_size, "token %d: shared slot holds %d", t, id);
            else if (shared && j < k - 1 && id == E - 1) rc = fail(why, why_size, "token %d: shared expert in a routed slot", t);
            else if (!(w >= 0.0f && w <= max_weight)) rc = fail(why, why_size, "token %d slot %d: weight %g", t, j, w);
            for (int32_t i = 0; i < j && rc == 0 && !hashed; ++i)
                if (plan->topk_ids[(int64_t)t * k + i] == id) rc = fail(why, why_size, "token %d: id %d twice", t, id);
            if (rc == 0 && local_of[id] >= 0) ++count[local_of[id]];
            if (rc == 0 && local_of[id] < 0 && plan->pair_to_sorted && plan->pair_to_sorted[pair] != -1)
                rc = fail(why, why_size, "pair %" PRId64 " of off-rank expert %d: pair_to_sorted %d, want -1", pair,
                          id, plan->pair_to_sorted[pair]);
        }
    }
    if (rc) goto done;
    for (int32_t l = 0; l < L; ++l) offset[l + 1] = offset[l] + (count[l] + bm - 1) / bm * bm;
    if (*plan->num_tokens_post_padded != offset[L]) {
        rc = fail(why, why_size, "live length %d, groups sum to %" PRId64, *plan->num_tokens_post_padded, offset[L]);
        goto done;
    }
    for (int32_t l = 0; l < L && rc == 0; ++l) {
        int64_t last = -1;
        for (int64_t pos = offset[l]; pos < offset[l + 1] && rc == 0; ++pos) {
            const int32_t v = plan->sorted_token_ids[pos];
            if (pos < offset[l] + count[l]) {
                if (v < 0 || v >= pairs || plan->topk_ids[v] < 0 || local_of[plan->topk_ids[v]] != l || v <= last)
                    rc = fail(why, why_size, "local expert %d group position %" PRId64 ": pair %d misplaced", l, pos, v);
                last = v;
                if (rc == 0 && plan->pair_to_sorted && plan->pair_to_sorted[v] != pos)
                    rc = fail(why, why_size, "pair_to_sorted[%d] = %d, pair sits at %" PRId64, v, plan->pair_to_sorted[v], pos);
            } else if (v != pairs) {
                rc = fail(why, why_size, "local expert %d padding position %" PRId64 " holds %d", l, pos, v);
            }
        }
        for (int64_t b = offset[l] / bm; b < offset[l + 1] / bm && rc == 0; ++b)
            if (plan->expert_ids[b] != l) rc = fail(why, why_size, "expert_ids[%" PRId64 "] = %d, want %d", b, plan->expert_ids[b], l);
        if (rc == 0 && plan->expert_counts && plan->expert_counts[l] != count[l])
            rc = fail(why, why_size, "expert_counts[%d] = %d, want %" PRId64, l, plan->expert_counts[l], count[l]);
        if (rc == 0 && plan->expert_offsets && plan->expert_offsets[l] != offset[l])
            rc = fail(why, why_size, "expert_offsets[%d] = %d, want %" PRId64, l, plan->expert_offsets[l], offset[l]);
    }
    if (rc == 0 && plan->expert_offsets && plan->expert_offsets[L] != offset[L])
        rc = fail(why, why_size, "expert_offsets[L] = %d, want %" PRId64, plan->expert_offsets[L], offset[L]);
done:
    free(count);
    free(offset);
    return rc;
}

/* -------------------------------------------------------------- routers */

alphamoe_params test_params(int32_t E, int32_t k, int32_t block_m, int32_t max_tokens, uint32_t flags) {
    alphamoe_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.num_experts = E;
    p.top_k = k;
    p.block_m = block_m;
    p.max_tokens = max_tokens;
    p.flags = flags;
    p.force_specialization = ALPHAMOE_SPECIALIZATION_AUTO;
    return p;
}

int64_t formula_capacity(int64_t pairs, int64_t E, int64_t block_m) {
    const int64_t nonempty = pairs < E ? pairs : E;
    const int64_t blocks = nonempty + (pairs - nonempty) / block_m;
    return blocks * block_m;
}

int gpu_wide_call(const alphamoe_params *p) {
    return p->num_experts > 512 || p->top_k > 16 ||
           (p->flags & (ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_REDUNDANT_EXPERTS)) != 0;
}

int32_t plan_routed_experts(const alphamoe_params *p) {
    return (p->flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) ? p->num_physical_experts : p->num_experts;
}

int large_grid_holds(int32_t M, int32_t sms, const alphamoe_params *p) {
    if (gpu_wide_call(p)) return 1;
    const int32_t k = p->top_k;
    const int64_t max_ctas = sms < 256 ? sms : 256;
    const int64_t tokens = M > 0 ? M : 1;
    int64_t per = (tokens + max_ctas - 1) / max_ctas;
    if (per < 8) per = 8;
    const int64_t grid = (tokens + per - 1) / per;
    int64_t groups = 1;
    while (groups * groups < grid) ++groups;
    const int64_t size = (grid + groups - 1) / groups;
    return size * per * k < ((int64_t)1 << 27);
}

alphamoe_router *make_router(int32_t E, int32_t k, int32_t block_m, int32_t max_tokens, uint32_t flags,
                             int32_t force_specialization) {
    alphamoe_params p = test_params(E, k, block_m, max_tokens > 0 ? max_tokens : 1, flags);
    p.force_specialization = force_specialization;
    alphamoe_router *r = NULL;
    const alphamoe_status s = alphamoe_router_create(&p, &r);
    if (s != ALPHAMOE_OK) {
        fprintf(stderr, "make_router(E=%d k=%d bm=%d max=%d flags=%u): %s\n", E, k, block_m, max_tokens,
                flags, alphamoe_status_string(s));
        abort();
    }
    return r;
}
