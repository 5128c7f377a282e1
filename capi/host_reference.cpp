// alphamoe_route_host: the contract, executed on the CPU in the plainest
// way that is still fast enough for millions of pairs. Weights are computed
// in double and rounded once.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "router_internal.h"

using namespace alphamoe;

namespace {

// Integer order equal to the ranking order of contract section 3 (larger
// ranks first; -0.0 == +0.0; NaN after every number).
uint32_t rank_key(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) return 1u;
    if (u == 0x80000000u) u = 0u;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// The first n_select experts of row[0..n_candidates) in ranking order.
void select_experts(const float *row, int n_candidates, int n_select, int32_t *ids) {
    uint32_t keys[ALPHAMOE_MAX_TOP_K];
    int held = 0;
    for (int e = 0; e < n_candidates; ++e) {
        const uint32_t key = rank_key(row[e]);
        // Equal keys keep the earlier (lower) id first: strict comparison.
        if (held == n_select && key <= keys[held - 1]) continue;
        int at = held < n_select ? held++ : held - 1;
        while (at > 0 && keys[at - 1] < key) {
            keys[at] = keys[at - 1];
            ids[at] = ids[at - 1];
            --at;
        }
        keys[at] = key;
        ids[at] = e;
    }
}

// Contract section 4.
void gate_weights(const float *logits, int k, float *weights) {
    double m = -INFINITY;
    for (int j = 0; j < k; ++j)
        if (!isnan(logits[j]) && logits[j] > m) m = logits[j];
    if (m == INFINITY) {
        int n_inf = 0;
        for (int j = 0; j < k; ++j) n_inf += logits[j] == INFINITY;
        for (int j = 0; j < k; ++j) weights[j] = logits[j] == INFINITY ? static_cast<float>(1.0 / n_inf) : 0.0f;
        return;
    }
    if (m == -INFINITY) {
        for (int j = 0; j < k; ++j) weights[j] = 0.0f;
        return;
    }
    double e[ALPHAMOE_MAX_TOP_K];
    double sum = 0.0;
    for (int j = 0; j < k; ++j) {
        e[j] = isnan(logits[j]) ? 0.0 : exp(static_cast<double>(logits[j]) - m);
        sum += e[j];
    }
    for (int j = 0; j < k; ++j) weights[j] = static_cast<float>(e[j] / sum);
}

}  // namespace

extern "C" alphamoe_status alphamoe_route_host(const alphamoe_router *router, int32_t num_tokens,
                                               const float *logits, const alphamoe_buffers *buffers) {
    alphamoe_buffers b;
    const alphamoe_status s = validate_call(router, num_tokens, logits, buffers, false, &b);
    if (s != ALPHAMOE_OK) return s;
    if (num_tokens == 0) {
        *b.num_tokens_post_padded = 0;
        return ALPHAMOE_OK;
    }
    const alphamoe_params &p = router->params;
    const int E = p.num_experts, k = p.top_k;
    const int32_t bm = p.block_m;
    const bool shared = shared_expert(*router);
    const int n_candidates = shared ? E - 1 : E;
    const int n_select = shared ? k - 1 : k;

    int32_t *count = static_cast<int32_t *>(calloc(static_cast<size_t>(E) + 1, sizeof(int32_t)));
    int32_t *offset = static_cast<int32_t *>(calloc(static_cast<size_t>(E) + 1, sizeof(int32_t)));
    if (count == nullptr || offset == nullptr) {
        free(count);
        free(offset);
        return ALPHAMOE_ERROR_OUT_OF_MEMORY;
    }

    for (int32_t t = 0; t < num_tokens; ++t) {
        const float *row = logits + static_cast<int64_t>(t) * p.logits_row_stride;
        int32_t *ids = b.topk_ids + static_cast<int64_t>(t) * k;
        select_experts(row, n_candidates, n_select, ids);
        if (shared) ids[k - 1] = E - 1;
        float chosen[ALPHAMOE_MAX_TOP_K];
        for (int j = 0; j < k; ++j) chosen[j] = row[ids[j]];
        gate_weights(chosen, k, b.topk_weights + static_cast<int64_t>(t) * k);
        for (int j = 0; j < k; ++j) ++count[ids[j]];
    }

    // Groups in expert order, each padded to a multiple of block_m.
    for (int e = 0; e < E; ++e) offset[e + 1] = offset[e] + (count[e] + bm - 1) / bm * bm;
    const int32_t live_length = offset[E];
    const int32_t sentinel = num_tokens * k;

    // Pairs in ascending index fill their group from the front; the rest of
    // each group is sentinel.
    int32_t *next = static_cast<int32_t *>(malloc(sizeof(int32_t) * static_cast<size_t>(E)));
    if (next == nullptr) {
        free(count);
        free(offset);
        return ALPHAMOE_ERROR_OUT_OF_MEMORY;
    }
    memcpy(next, offset, sizeof(int32_t) * static_cast<size_t>(E));
    for (int32_t pair = 0; pair < sentinel; ++pair) {
        const int32_t pos = next[b.topk_ids[pair]]++;
        b.sorted_token_ids[pos] = pair;
        if (b.pair_to_sorted) b.pair_to_sorted[pair] = pos;
    }
    for (int e = 0; e < E; ++e) {
        for (int32_t pos = next[e]; pos < offset[e + 1]; ++pos) b.sorted_token_ids[pos] = sentinel;
        for (int32_t block = offset[e] / bm; block < offset[e + 1] / bm; ++block) b.expert_ids[block] = e;
        if (b.expert_counts) b.expert_counts[e] = count[e];
        if (b.expert_offsets) b.expert_offsets[e] = offset[e];
    }
    if (b.expert_offsets) b.expert_offsets[E] = live_length;
    *b.num_tokens_post_padded = live_length;
    if (p.flags & ALPHAMOE_FLAG_TAIL_FILL) {
        for (int64_t pos = live_length; pos < router->capacity; ++pos) b.sorted_token_ids[pos] = sentinel;
        for (int64_t block = live_length / bm; block < router->capacity / bm; ++block) b.expert_ids[block] = -1;
    }
    free(next);
    free(count);
    free(offset);
    return ALPHAMOE_OK;
}
