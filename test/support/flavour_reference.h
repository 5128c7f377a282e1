/* A second implementation of the routing contract for every flavour,
 * written from README's contract section and sharing no code with the
 * library but the score formulas the contract itself defines
 * (kernels/common/score_math.h): experts and groups ordered by qsort with
 * comparators that state the tie rules on values, weights in long double,
 * the plan from a sort of (local expert, pair) tuples. */
#ifndef ALPHAMOE_TEST_FLAVOUR_REFERENCE_H
#define ALPHAMOE_TEST_FLAVOUR_REFERENCE_H

#include <stdint.h>

#include "test_support.h"

typedef struct flavour_call {
    const alphamoe_params *params; /* normalized, as alphamoe_router_get_params returns them */
    int32_t M;
    const float *logits;      /* fp32 values the router sees, [M, params->logits_row_stride] */
    const float *bias;        /* [E] with ALPHAMOE_FLAG_CORRECTION_BIAS, else ignored */
    const int32_t *expert_map; /* [E] with ALPHAMOE_FLAG_EXPERT_MAP, else ignored */
    const int32_t *token_ids;  /* [M] with ALPHAMOE_FLAG_HASH_ROUTING, else ignored */
    const int32_t *hash_table; /* [vocab_size, k] likewise */
} flavour_call;

/* Writes every output of the call into `out`, a plan allocated with the
 * optional outputs for the same router. */
void flavour_reference_route(const flavour_call *call, host_plan *out);

/* Writes the plan of the M*k pairs in out->topk_ids (ids of the experts
 * plan_routed_experts names, -1 for none) into `out`. */
void flavour_reference_plan(const alphamoe_params *p, int32_t M, const int32_t *expert_map, host_plan *out);

/* Redundant experts' replica rule on M*k pairs of logical ids (-1 for
 * none): pair p of logical e takes logical_to_physical[e*R + p % c] with
 * c = replica_count[e] when c is in [1, R] and that id in [0, P), else -1.
 * Writes the physical ids to `physical` and, when `load` is not NULL, adds
 * 1 at each physical id given (in 32-bit wrap-around). */
void flavour_reference_replicas(const alphamoe_params *p, int32_t M, const int32_t *logical,
                                const int32_t *replica_count, const int32_t *logical_to_physical, int32_t *physical,
                                int32_t *load);

/* The per-expert score of sigmoid or sqrt-softplus scoring. */
float flavour_score(const alphamoe_params *p, float logit);

/* The ranking key of expert e of a row: the logit, or with a correction
 * bias fl(score(logit) + bias). */
float flavour_key(const alphamoe_params *p, const float *row, const float *bias, int32_t e);

/* Contract order on two values: negative when x ranks before y. Numbers
 * compare as IEEE values (-0.0 == +0.0), NaN after every number; equal
 * values by the lower index. */
int flavour_rank_before(float x, int32_t ix, float y, int32_t iy);

/* The tolerance on weights: 4e-6, times the scaling factor when above 1. */
float flavour_weight_tolerance(const alphamoe_params *p);

#endif
