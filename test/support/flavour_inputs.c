#include "flavour_inputs.h"

#include <math.h>
#include <stdlib.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

const char *bias_pattern_name(bias_pattern pattern) {
    static const char *const names[] = {"random", "zero", "ties", "non-finite"};
    return (unsigned)pattern < COUNT_OF(names) ? names[pattern] : "?";
}

void fill_bias(test_rng *rng, float *bias, int32_t E, bias_pattern pattern) {
    const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e30f, -1e30f};
    for (int32_t e = 0; e < E; ++e) {
        switch (pattern) {
        case BIAS_ZERO: bias[e] = 0.0f; break;
        case BIAS_TIES: bias[e] = (float)rng_below(rng, 3) * 0.25f; break;
        case BIAS_NONFINITE:
            bias[e] = rng_below(rng, 2) ? specials[rng_below(rng, COUNT_OF(specials))] : rng_uniform(rng, -1, 1);
            break;
        default: bias[e] = rng_uniform(rng, -1.0f, 1.0f); break;
        }
    }
}

void fill_expert_map(test_rng *rng, int32_t *map, int32_t E, int32_t L, int junk) {
    int32_t *perm = malloc((size_t)E * sizeof *perm);
    if (perm == NULL) abort();
    for (int32_t e = 0; e < E; ++e) perm[e] = e;
    for (int32_t e = E - 1; e > 0; --e) {
        const int32_t j = (int32_t)rng_below(rng, (uint32_t)e + 1);
        const int32_t t = perm[e];
        perm[e] = perm[j];
        perm[j] = t;
    }
    for (int32_t e = 0; e < E; ++e) map[e] = -1;
    for (int32_t l = 0; l < L && l < E; ++l) map[perm[l]] = l;
    if (junk) {
        const int32_t junk_values[] = {L, L + 1, 1000, -2, INT32_MIN, INT32_MAX};
        for (int32_t i = L; i < E; ++i)
            if (rng_below(rng, 2)) map[perm[i]] = junk_values[rng_below(rng, COUNT_OF(junk_values))];
    }
    free(perm);
}

void fill_expert_map_with_shared_ids(test_rng *rng, int32_t *map, int32_t E, int32_t L) {
    for (int32_t e = 0; e < E; ++e) map[e] = rng_below(rng, 4) == 0 ? -1 : (int32_t)rng_below(rng, (uint32_t)L);
}

void fill_hash_inputs(test_rng *rng, int32_t *token_ids, int32_t M, int32_t *table, int32_t vocab, int32_t k,
                      int32_t E) {
    static const int32_t unknown[] = {-1, INT32_MIN, INT32_MAX};
    for (int32_t t = 0; t < M; ++t)
        token_ids[t] = rng_below(rng, 8)   ? (int32_t)rng_below(rng, (uint32_t)vocab)
                       : rng_below(rng, 2) ? vocab
                                           : unknown[rng_below(rng, 3)];
    for (int64_t i = 0; i < (int64_t)vocab * k; ++i)
        table[i] = rng_below(rng, 16) ? (int32_t)rng_below(rng, (uint32_t)E)
                   : rng_below(rng, 2) ? E
                                       : unknown[rng_below(rng, 3)];
}

void fill_replica_tables(test_rng *rng, int32_t *logical_to_physical, int32_t *replica_count, int32_t E, int32_t R,
                         int32_t P) {
    static const int32_t bad_counts[] = {0, -1, INT32_MIN, INT32_MAX};
    static const int32_t bad_ids[] = {-1, INT32_MIN, INT32_MAX};
    for (int32_t e = 0; e < E; ++e)
        replica_count[e] = rng_below(rng, 16)  ? 1 + (int32_t)rng_below(rng, (uint32_t)R)
                           : rng_below(rng, 2) ? R + 1
                                               : bad_counts[rng_below(rng, 4)];
    for (int64_t i = 0; i < (int64_t)E * R; ++i)
        logical_to_physical[i] = rng_below(rng, 32)  ? (int32_t)rng_below(rng, (uint32_t)P)
                                 : rng_below(rng, 2) ? P
                                                     : bad_ids[rng_below(rng, 3)];
}
