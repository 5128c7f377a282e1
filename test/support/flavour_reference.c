#include "flavour_reference.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/score_math.h"

int flavour_rank_before(float x, int32_t ix, float y, int32_t iy) {
    const int nx = isnan(x) != 0, ny = isnan(y) != 0;
    if (nx != ny) return nx ? 1 : -1;
    if (!nx) {
        if (x > y) return -1;
        if (x < y) return 1;
    }
    return (ix > iy) - (ix < iy);
}

float flavour_score(const alphamoe_params *p, float logit) {
    return p->scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS ? alphamoe_sqrt_softplus(logit) : alphamoe_sigmoid(logit);
}

float flavour_key(const alphamoe_params *p, const float *row, const float *bias, int32_t e) {
    if (!(p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS)) return row[e];
    return flavour_score(p, row[e]) + bias[e];
}

float flavour_weight_tolerance(const alphamoe_params *p) {
    return 4e-6f * (p->routed_scaling_factor > 1.0f ? p->routed_scaling_factor : 1.0f);
}

/* qsort has no context argument: the values being ordered live here. */
static const float *g_values;

static int compare_by_value(const void *pa, const void *pb) {
    const int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    return flavour_rank_before(g_values[a], a, g_values[b], b);
}

static void order_by_value(const float *values, int32_t *index, int32_t n) {
    g_values = values;
    qsort(index, (size_t)n, sizeof *index, compare_by_value);
}

/* Candidates of one token: all routed experts, or the experts of the
 * topk_groups best groups. Returns their count. */
static int32_t candidates(const alphamoe_params *p, const float *keys, int32_t *out) {
    const int32_t E = p->num_experts, G = p->num_groups > 1 ? p->num_groups : 1;
    const int shared = (p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) != 0;
    if (G == 1) {
        const int32_t n = shared ? E - 1 : E;
        for (int32_t e = 0; e < n; ++e) out[e] = e;
        return n;
    }
    const int32_t size = E / G;
    float score[ALPHAMOE_MAX_EXPERTS];
    int32_t groups[ALPHAMOE_MAX_EXPERTS], members[ALPHAMOE_MAX_EXPERTS];
    for (int32_t g = 0; g < G; ++g) {
        for (int32_t i = 0; i < size; ++i) members[i] = g * size + i;
        order_by_value(keys, members, size);
        const int pair = (p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) && size >= 2;
        score[g] = pair ? keys[members[0]] + keys[members[1]] : keys[members[0]];
        groups[g] = g;
    }
    order_by_value(score, groups, G);
    const int32_t kept = p->topk_groups > 0 ? p->topk_groups : G;
    int32_t n = 0;
    for (int32_t g = 0; g < G; ++g) {
        int keep = 0;
        for (int32_t i = 0; i < kept; ++i) keep |= groups[i] == g;
        for (int32_t i = 0; keep && i < size; ++i) out[n++] = g * size + i;
    }
    return n;
}

/* Weights before scaling, in long double. */
static void unscaled_weights(const alphamoe_params *p, const float *row, const int32_t *ids, long double *w) {
    const int32_t k = p->top_k, E = p->num_experts;
    const int renormalize = !(p->flags & ALPHAMOE_FLAG_NO_RENORMALIZE);
    /* The chosen logits; a pair of no expert (hash routing's -1) reads as
     * NaN: weight 0, in no sum. */
    float chosen[ALPHAMOE_MAX_TOP_K];
    for (int32_t j = 0; j < k; ++j) chosen[j] = ids[j] >= 0 ? row[ids[j]] : NAN;
    if (p->scoring != ALPHAMOE_SCORING_SOFTMAX) {
        /* The contract's scores are the formulas' fp32 values; infinite
         * ones (sqrt-softplus of +inf) share the weight. */
        long double sum = 0.0L;
        int n_inf = 0;
        for (int32_t j = 0; j < k; ++j) {
            const float s = flavour_score(p, chosen[j]);
            w[j] = isnan(s) ? 0.0L : (long double)s;
            n_inf += isinf(s) != 0;
            sum += isinf(s) ? 0.0L : w[j];
        }
        if (!renormalize) return;
        for (int32_t j = 0; j < k; ++j) {
            if (n_inf > 0)
                w[j] = isinf(w[j]) ? 1.0L / n_inf : 0.0L;
            else
                w[j] = sum > 0.0L ? w[j] / sum : 0.0L;
        }
        return;
    }
    /* Softmax over the chosen logits, or over the whole row. */
    const int32_t n = renormalize ? k : E;
    long double m = -INFINITY;
    for (int32_t i = 0; i < n; ++i) {
        const float v = renormalize ? chosen[i] : row[i];
        if (!isnan(v) && (long double)v > m) m = v;
    }
    if (m == -INFINITY) {
        for (int32_t j = 0; j < k; ++j) w[j] = 0.0L;
        return;
    }
    if (m == INFINITY) {
        int n_inf = 0;
        for (int32_t i = 0; i < n; ++i) n_inf += (renormalize ? chosen[i] : row[i]) == INFINITY;
        for (int32_t j = 0; j < k; ++j) w[j] = chosen[j] == INFINITY ? 1.0L / n_inf : 0.0L;
        return;
    }
    long double sum = 0.0L;
    for (int32_t i = 0; i < n; ++i) {
        const float v = renormalize ? chosen[i] : row[i];
        if (!isnan(v)) sum += expl((long double)v - m);
    }
    for (int32_t j = 0; j < k; ++j) {
        const float v = chosen[j];
        w[j] = isnan(v) ? 0.0L : expl((long double)v - m) / sum;
    }
}

typedef struct pair_key {
    int32_t local, pair;
} pair_key;

static int compare_pairs(const void *pa, const void *pb) {
    const pair_key *a = pa, *b = pb;
    if (a->local != b->local) return (a->local > b->local) - (a->local < b->local);
    return (a->pair > b->pair) - (a->pair < b->pair);
}

void flavour_reference_route(const flavour_call *call, host_plan *out) {
    const alphamoe_params *p = call->params;
    const int32_t E = p->num_experts, k = p->top_k, M = call->M;
    const int shared = (p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) != 0;
    if (M == 0) {
        out->num_tokens_post_padded[0] = 0;
        return;
    }
    for (int32_t t = 0; t < M; ++t) {
        const float *row = call->logits + (int64_t)t * p->logits_row_stride;
        int32_t *ids = out->topk_ids + (int64_t)t * k;
        if (p->flags & ALPHAMOE_FLAG_HASH_ROUTING) {
            /* The token's row of the table; no expert (-1) for an unknown
             * token or an entry that names none. */
            const int32_t v = call->token_ids[t];
            for (int32_t j = 0; j < k; ++j) {
                const int32_t e = v >= 0 && v < p->vocab_size ? call->hash_table[(int64_t)v * k + j] : -1;
                ids[j] = e >= 0 && e < E ? e : -1;
            }
        } else {
            float keys[ALPHAMOE_MAX_EXPERTS];
            for (int32_t e = 0; e < E; ++e) keys[e] = flavour_key(p, row, call->bias, e);
            int32_t cand[ALPHAMOE_MAX_EXPERTS];
            const int32_t n = candidates(p, keys, cand);
            order_by_value(keys, cand, n);
            for (int32_t j = 0; j < (shared ? k - 1 : k); ++j) ids[j] = cand[j];
            if (shared) ids[k - 1] = E - 1;
        }
        long double w[ALPHAMOE_MAX_TOP_K];
        unscaled_weights(p, row, ids, w);
        for (int32_t j = 0; j < k; ++j) {
            /* Past the largest float, the largest float. */
            const long double scaled = w[j] * (long double)p->routed_scaling_factor;
            out->topk_weights[(int64_t)t * k + j] = scaled > (long double)FLT_MAX ? FLT_MAX : (float)scaled;
        }
    }

    flavour_reference_plan(p, M, call->expert_map, out);
}

void flavour_reference_plan(const alphamoe_params *p, int32_t M, const int32_t *expert_map, host_plan *out) {
    const int32_t k = p->top_k, bm = p->block_m, L = p->local_expert_count;
    if (M == 0) {
        out->num_tokens_post_padded[0] = 0;
        return;
    }
    /* The contract's local ids, stated directly, over the experts topk_ids
     * name (the physical ones with redundant experts). */
    int32_t local_of[ALPHAMOE_MAX_EXPERTS];
    for (int32_t g = 0; g < plan_routed_experts(p); ++g) {
        int32_t v;
        if (p->flags & ALPHAMOE_FLAG_EXPERT_MAP) v = expert_map[g];
        else v = g - p->local_expert_begin;
        local_of[g] = (v >= 0 && v < L) ? v : -1;
    }
    const int64_t P = (int64_t)M * k;
    const int32_t sentinel = (int32_t)P;
    pair_key *keys = malloc((size_t)P * sizeof *keys);
    if (keys == NULL) abort();
    int64_t n_local = 0;
    for (int64_t i = 0; i < P; ++i) {
        const int32_t id = out->topk_ids[i];
        const int32_t local = id >= 0 ? local_of[id] : -1;
        out->pair_to_sorted[i] = -1;
        if (local >= 0) keys[n_local++] = (pair_key){local, (int32_t)i};
    }
    qsort(keys, (size_t)n_local, sizeof *keys, compare_pairs);
    int64_t pos = 0, at = 0;
    for (int32_t l = 0; l < L; ++l) {
        const int64_t start = pos;
        while (at < n_local && keys[at].local == l) {
            out->sorted_token_ids[pos] = keys[at].pair;
            out->pair_to_sorted[keys[at].pair] = (int32_t)pos;
            ++pos;
            ++at;
        }
        out->expert_counts[l] = (int32_t)(pos - start);
        while ((pos - start) % bm != 0) out->sorted_token_ids[pos++] = sentinel;
        for (int64_t b = start / bm; b < pos / bm; ++b) out->expert_ids[b] = l;
        out->expert_offsets[l] = (int32_t)start;
    }
    out->expert_offsets[L] = (int32_t)pos;
    out->num_tokens_post_padded[0] = (int32_t)pos;
    if (p->flags & ALPHAMOE_FLAG_TAIL_FILL) {
        for (int64_t i = pos; i < out->sizes.sorted_token_ids.elements; ++i) out->sorted_token_ids[i] = sentinel;
        for (int64_t b = pos / bm; b < out->sizes.expert_ids.elements; ++b) out->expert_ids[b] = -1;
    }
    free(keys);
}

void flavour_reference_replicas(const alphamoe_params *p, int32_t M, const int32_t *logical,
                                const int32_t *replica_count, const int32_t *logical_to_physical, int32_t *physical,
                                int32_t *load) {
    const int32_t R = p->replica_slots, P = p->num_physical_experts;
    const int64_t pairs = (int64_t)M * p->top_k;
    for (int64_t i = 0; i < pairs; ++i) {
        const int32_t e = logical[i];
        int32_t q = -1;
        if (e >= 0 && replica_count[e] >= 1 && replica_count[e] <= R) {
            const int32_t id = logical_to_physical[(int64_t)e * R + i % replica_count[e]];
            if (id >= 0 && id < P) q = id;
        }
        physical[i] = q;
        /* Unsigned: the contract's wrap-around, without signed overflow. */
        if (q >= 0 && load) load[q] = (int32_t)((uint32_t)load[q] + 1u);
    }
}
