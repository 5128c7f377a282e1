// The host reference's scoring: logits of any type as fp32, the keys that
// rank experts, and the gate weights of the chosen ones (README, "What a
// call computes").
#ifndef ALPHAMOE_CAPI_REFERENCE_SCORING_H
#define ALPHAMOE_CAPI_REFERENCE_SCORING_H

#include <stdint.h>

#include "alphamoe/router.h"

namespace alphamoe {

// Row `row` of the logits as fp32: the row itself for fp32 logits, else
// each logit converted exactly into out[0..E), which is returned.
const float *logits_row(const alphamoe_params &p, const void *logits, int64_t row, float *out);

// The values experts are ranked by: the logits themselves, or with a
// correction bias fl(score(L_e) + bias_e), the score sigmoid or
// sqrt-softplus. Returns the array to rank by
// (`logits` itself when no key needs computing).
const float *ranking_keys(const alphamoe_params &p, const float *logits, const float *bias, float *keys);

// Weights of the k chosen experts ids[0..k) of a token whose fp32 logits
// (all E) are `logits`, scaling factor applied, rounded once to fp32.
void gate_weights(const alphamoe_params &p, const float *logits, const int32_t *ids, float *weights);

}  // namespace alphamoe

#endif
