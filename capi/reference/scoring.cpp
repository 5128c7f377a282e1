// Weights are computed in double from the fp32 logits (and, for sigmoid
// and sqrt-softplus scoring, from the fp32 scores of the shared formulas)
// and rounded once.
#include "scoring.h"

#include <float.h>
#include <math.h>

#include "common/score_math.h"

// The shared scoring arithmetic is exact only when every float operation
// rounds to binary32: no excess precision on this host.
static_assert(FLT_EVAL_METHOD == 0, "the host reference needs binary32 float arithmetic");

namespace alphamoe {

const float *logits_row(const alphamoe_params &p, const void *logits, int64_t row, float *out) {
    const int32_t E = p.num_experts;
    const int64_t first = row * p.logits_row_stride;
    if (p.logits_type == ALPHAMOE_LOGITS_F32) return static_cast<const float *>(logits) + first;
    const uint16_t *in = static_cast<const uint16_t *>(logits) + first;
    if (p.logits_type == ALPHAMOE_LOGITS_BF16)
        for (int32_t e = 0; e < E; ++e) out[e] = alphamoe_bf16_to_float(in[e]);
    else
        for (int32_t e = 0; e < E; ++e) out[e] = alphamoe_f16_to_float(in[e]);
    return out;
}

namespace {

// The per-expert score of sigmoid or sqrt-softplus scoring.
float expert_score(const alphamoe_params &p, float logit) {
    return p.scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS ? alphamoe_sqrt_softplus(logit) : alphamoe_sigmoid(logit);
}

}  // namespace

const float *ranking_keys(const alphamoe_params &p, const float *logits, const float *bias, float *keys) {
    // Without a bias, per-expert scores rank as the logits do (neither
    // score ever decreases), and the logits keep apart what rounding ties.
    if (!(p.flags & ALPHAMOE_FLAG_CORRECTION_BIAS)) return logits;
    for (int32_t e = 0; e < p.num_experts; ++e) keys[e] = alphamoe_biased_score(expert_score(p, logits[e]), bias[e]);
    return keys;
}

namespace {

// The logit of chosen expert `id`, NaN for a pair of no expert (id -1,
// hash routing's): it weighs 0 and counts in no sum.
float chosen_logit(const float *row, int32_t id) { return id >= 0 ? row[id] : NAN; }

// Softmax probabilities over row[0..E) of the entries ids[0..k): the
// denominator runs over the whole row.
void softmax_of_row(const float *row, int32_t E, const int32_t *ids, int32_t k, double *w) {
    double m = -INFINITY;
    for (int32_t e = 0; e < E; ++e)
        if (!isnan(row[e]) && row[e] > m) m = row[e];
    if (m == INFINITY) {
        int n_inf = 0;
        for (int32_t e = 0; e < E; ++e) n_inf += row[e] == INFINITY;
        for (int32_t j = 0; j < k; ++j) w[j] = chosen_logit(row, ids[j]) == INFINITY ? 1.0 / n_inf : 0.0;
        return;
    }
    if (m == -INFINITY) {
        for (int32_t j = 0; j < k; ++j) w[j] = 0.0;
        return;
    }
    double sum = 0.0;
    for (int32_t e = 0; e < E; ++e)
        if (!isnan(row[e])) sum += exp(static_cast<double>(row[e]) - m);
    for (int32_t j = 0; j < k; ++j) {
        const float v = chosen_logit(row, ids[j]);
        w[j] = isnan(v) ? 0.0 : exp(static_cast<double>(v) - m) / sum;
    }
}

// Per-expert scores of the chosen experts (a NaN score counts 0), divided
// by their sum when renormalizing: a zero sum leaves every weight 0, and
// n infinite scores (sqrt-softplus of +inf) weigh 1/n each, every other 0.
void scores_of_chosen(const alphamoe_params &p, const float *row, const int32_t *ids, int32_t k, bool renormalize,
                      double *w) {
    double sum = 0.0;
    int n_inf = 0;
    for (int32_t j = 0; j < k; ++j) {
        const float s = expert_score(p, chosen_logit(row, ids[j]));
        w[j] = isnan(s) ? 0.0 : static_cast<double>(s);
        sum += w[j];
        n_inf += w[j] == INFINITY;
    }
    if (!renormalize) return;
    for (int32_t j = 0; j < k; ++j)
        w[j] = n_inf > 0 ? (w[j] == INFINITY ? 1.0 / n_inf : 0.0) : sum > 0.0 ? w[j] / sum : 0.0;
}

}  // namespace

void gate_weights(const alphamoe_params &p, const float *logits, const int32_t *ids, float *weights) {
    const int32_t k = p.top_k;
    const bool renormalize = !(p.flags & ALPHAMOE_FLAG_NO_RENORMALIZE);
    double w[ALPHAMOE_MAX_TOP_K];
    if (p.scoring != ALPHAMOE_SCORING_SOFTMAX) {
        scores_of_chosen(p, logits, ids, k, renormalize, w);
    } else if (renormalize) {
        // The renormalized top-k softmax: the softmax of a row of the chosen logits.
        float chosen[ALPHAMOE_MAX_TOP_K] = {};
        int32_t order[ALPHAMOE_MAX_TOP_K] = {};
        for (int32_t j = 0; j < k; ++j) {
            chosen[j] = chosen_logit(logits, ids[j]);
            order[j] = j;
        }
        softmax_of_row(chosen, k, order, k, w);
    } else {
        softmax_of_row(logits, p.num_experts, ids, k, w);
    }
    // A weight past the largest float (unrenormalized sqrt-softplus scores)
    // is the largest float: weights are never infinite.
    const double scale = p.routed_scaling_factor;
    for (int32_t j = 0; j < k; ++j) weights[j] = static_cast<float>(fmin(w[j] * scale, FLT_MAX));
}

}  // namespace alphamoe
