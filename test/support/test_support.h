/* Shared helpers of the router tests: random inputs, plan buffers with
 * guard zones, poisoning, and the comparison of two plans. */
#ifndef ALPHAMOE_TEST_SUPPORT_H
#define ALPHAMOE_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "alphamoe/router_diagnostics.h"

/* ---- random numbers (splitmix64): reproducible from a printed seed ---- */
typedef struct test_rng {
    uint64_t state;
} test_rng;

void rng_seed(test_rng *rng, uint64_t seed);
uint64_t rng_next(test_rng *rng);
uint32_t rng_below(test_rng *rng, uint32_t n); /* uniform in [0, n) */
float rng_uniform(test_rng *rng, float lo, float hi);
/* The run's base seed: $ALPHAMOE_TEST_SEED if set, else drawn from the
 * clock; printed once so a failure can be replayed. */
uint64_t test_base_seed(void);
/* Seeds rng from the run's base seed and a salt of the test's own, so each
 * test draws its own stream and still replays from the one printed seed. */
void rng_seed_for_test(test_rng *rng, uint64_t salt);
/* A sweep's share of its items under $ALPHAMOE_TEST_SHARD="i/n" (1 <= i <=
 * n): item j is this run's where j % n == i - 1, every item without it.
 * Sets *count to n (1 without it); returns the zero-based i, or -1 where the
 * value is malformed (the test fails rather than sweep the wrong share). */
int test_shard(int *count);

/* ---- logits ---- */
float bits_to_float(uint32_t bits);

typedef enum logit_pattern {
    LOGITS_RANDOM,      /* uniform in [-8, 8) */
    LOGITS_QUANTIZED,   /* a few distinct values per row: heavy ties */
    LOGITS_ONE_HOT,     /* `hot` expert far above the rest in every row */
    LOGITS_ALL_EQUAL,   /* every logit of a row equal */
    LOGITS_NONFINITE,   /* rows mixing NaN, +-inf, -0.0, +0.0, denormals and numbers */
    LOGITS_RANDOM_BITS, /* arbitrary 32-bit patterns */
    LOGITS_ROW_CLASSES, /* each row one class of bits (logit_classes.h): all NaN, all +inf, ... */
    LOGITS_HOT_LANE,    /* 4 or more of a row's largest on one lane's experts (l, l + 32, ...) */
    LOGITS_TOP_TIES,    /* a row's largest in groups of equal values, signed zeros among them */
    LOGITS_PATTERN_COUNT
} logit_pattern;

const char *logit_pattern_name(logit_pattern pattern);
/* "softmax", "sigmoid", "sqrt-softplus" for an alphamoe_scoring. */
const char *scoring_name(int32_t scoring);
/* Fills rows [0, M) of an [M, stride] array; columns E..stride-1 get NaN
 * so that reading past E would show. */
void fill_logits(test_rng *rng, float *logits, int32_t M, int32_t E, int64_t stride,
                 logit_pattern pattern, int32_t hot);

/* ---- plan buffers on the host ---- */
/* Each array is allocated with TEST_GUARD extra elements behind it; all of
 * it is poisoned before a call, and the guard must stay poisoned. */
#define TEST_GUARD 64
#define TEST_POISON_I32 ((int32_t)0x5A5A5A5A)
#define TEST_POISON_F32_BITS 0x7FC0DEADu

typedef struct host_plan {
    alphamoe_params params;
    alphamoe_sizes sizes;
    int32_t *topk_ids;
    float *topk_weights;
    int32_t *sorted_token_ids;
    int32_t *expert_ids;
    int32_t *num_tokens_post_padded;
    int32_t *expert_counts;  /* NULL when optional outputs are off */
    int32_t *expert_offsets;
    int32_t *pair_to_sorted;
    alphamoe_buffers buffers; /* points at the arrays above */
} host_plan;

/* Returns 0 on success. with_optional: also allocate the optional outputs. */
int host_plan_alloc(host_plan *plan, const alphamoe_router *router, int with_optional);
void host_plan_poison(host_plan *plan);
void host_plan_free(host_plan *plan);

/* The largest weight the contract allows: the routed scaling factor. */
float plan_max_weight(const host_plan *plan);
/* The experts topk_ids name: num_physical_experts with
 * ALPHAMOE_FLAG_REDUNDANT_EXPERTS, else num_experts. */
int32_t plan_routed_experts(const alphamoe_params *p);
/* Local id of every routed expert under the plan's parameters (and
 * buffers.expert_map with ALPHAMOE_FLAG_EXPERT_MAP), -1 when not local.
 * Written from the contract's words, for checks. */
void plan_local_ids(const host_plan *plan, int32_t *local_of);

/* Compares two plans of the same router for M tokens: ids and plan bitwise,
 * weights within tolerance, and every element that must not be written
 * (beyond the live extent, the guards) still poisoned in `b`, the plan
 * under test. Returns 0 when equal, else writes a reason into why. */
int compare_plans(const host_plan *expected, const host_plan *actual, int32_t M, float weight_tol,
                  char *why, size_t why_size);

/* Checks the contract's invariants on one plan by itself (independent of
 * any reference): ids distinct and in range, weights in [0, scale], groups
 * of local experts sorted, padded, consistent with counts, off-rank pairs
 * nowhere. Returns 0 when valid. The expert map, if any, is read from
 * plan->buffers.expert_map. */
int validate_plan(const host_plan *plan, int32_t M, char *why, size_t why_size);

/* ---- routers ---- */
/* Parameters for the given shape: no row stride (rows of E logits), the
 * library's choice of specialization, every other field zero. */
alphamoe_params test_params(int32_t E, int32_t k, int32_t block_m, int32_t max_tokens, uint32_t flags);

/* The plan capacity of contract section 5, written out independently of
 * the library: what alphamoe_router_sizes must report for sorted_token_ids. */
int64_t formula_capacity(int64_t pairs, int64_t E, int64_t block_m);

/* Whether the large kernel's group sums hold M tokens of k pairs of E
 * experts on `sms` multiprocessors, written out independently of the
 * library: its grid spreads the tokens over at most min(sms, 256) CTAs, at
 * least 8 on each, in ceil(sqrt(grid)) groups, and a group's tokens times
 * k must stay below 2^27 (kernels/route_args.h). The wide kernels' grid
 * (gpu_wide_call) keeps no group sums and holds every call. */
int large_grid_holds(int32_t M, int32_t sms, const alphamoe_params *p);

/* Whether the GPU routes calls of the router p with its wide kernels
 * (E > 512, k > 16, hash routing or redundant experts). */
int gpu_wide_call(const alphamoe_params *p);

/* A router for the given shape (max_tokens = M, or 1 when M == 0).
 * Aborts on failure: tests build only valid shapes with it. */
alphamoe_router *make_router(int32_t E, int32_t k, int32_t block_m, int32_t max_tokens,
                             uint32_t flags, int32_t force_specialization);

#endif
