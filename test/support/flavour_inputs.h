/* Per-expert inputs of the routing flavours for the tests: correction
 * biases of several kinds, expert maps, hash routing's token ids and
 * tables, redundant experts' replica tables. */
#ifndef ALPHAMOE_TEST_FLAVOUR_INPUTS_H
#define ALPHAMOE_TEST_FLAVOUR_INPUTS_H

#include <stdint.h>

#include "test_support.h"

typedef enum bias_pattern {
    BIAS_RANDOM,    /* uniform in [-1, 1): reorders experts */
    BIAS_ZERO,      /* all zero: keys are the sigmoid scores */
    BIAS_TIES,      /* a few levels: with scores of a few levels, heavy ties of keys */
    BIAS_NONFINITE, /* NaN, +-inf, signed zeros, huge and ordinary numbers mixed */
    BIAS_PATTERN_COUNT
} bias_pattern;

const char *bias_pattern_name(bias_pattern pattern);
void fill_bias(test_rng *rng, float *bias, int32_t E, bias_pattern pattern);

/* A map of E global experts onto L local ids: each local id owned by one
 * global expert chosen at random, the rest -1; with junk, some of the rest
 * get values outside [0, L) other than -1 (L, 1000, -2, INT32_MIN, ...),
 * which the contract reads as -1. */
void fill_expert_map(test_rng *rng, int32_t *map, int32_t E, int32_t L, int junk);

/* A map that gives several global experts one local id: each of the E
 * experts a random local id in [0, L), or (one in four) -1. */
void fill_expert_map_with_shared_ids(test_rng *rng, int32_t *map, int32_t E, int32_t L);

/* Hash routing's inputs: M token ids, one in eight outside [0, vocab)
 * (vocab itself, -1, INT32_MIN, INT32_MAX); a [vocab, k] table of experts
 * in [0, E), repeats within a row allowed, one entry in sixteen outside
 * (E, -1, INT32_MIN, INT32_MAX). */
void fill_hash_inputs(test_rng *rng, int32_t *token_ids, int32_t M, int32_t *table, int32_t vocab, int32_t k,
                      int32_t E);

/* Redundant experts' tables: each of the E logical experts 1 to R
 * replicas, one in sixteen a count outside [1, R] (R + 1, 0, -1,
 * INT32_MIN, INT32_MAX); [E, R] physical ids in [0, P), one in 32 outside
 * (P, -1, INT32_MIN, INT32_MAX). */
void fill_replica_tables(test_rng *rng, int32_t *logical_to_physical, int32_t *replica_count, int32_t E, int32_t R,
                         int32_t P);

#endif
