// The host reference's expert selection: the ranking order, plain top-k
// and grouped top-k.
#ifndef ALPHAMOE_CAPI_REFERENCE_TOPK_H
#define ALPHAMOE_CAPI_REFERENCE_TOPK_H

#include <stdint.h>

#include "alphamoe/router.h"

namespace alphamoe {

// Integer order equal to the ranking order (larger ranks first; -0.0 ==
// +0.0; NaN after every number, -inf included).
uint32_t rank_key(float x);

// The first n_select experts of [0, n_candidates) in ranking order of keys,
// ties to the lower id.
void select_top(const float *keys, int32_t n_candidates, int32_t n_select, int32_t *ids);

// Grouped top-k (params.num_groups > 1): rank the groups by their score,
// keep the best topk_groups, then the first top_k of their experts. A
// group's score is the sum of its two best keys when a correction bias
// is set (its one key for a group of one), else its best key.
void select_grouped(const alphamoe_params &p, const float *keys, int32_t *ids);

// Hash routing: row token_id of the table, each entry outside [0, E) and
// every entry of a token id outside [0, vocab_size) as -1 (no expert).
void hashed_experts(const alphamoe_params &p, int32_t token_id, const int32_t *table, int32_t *ids);

}  // namespace alphamoe

#endif
