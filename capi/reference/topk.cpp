#include "topk.h"

#include <string.h>

#include <algorithm>

#include "common/score_math.h"

namespace alphamoe {

uint32_t rank_key(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) return 1u;
    if (u == 0x80000000u) u = 0u;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

namespace {

struct Range {
    int32_t begin, end;
};

// The first n_select experts of the ranges (ascending, disjoint) in ranking
// order. Experts arrive in ascending id, and an equal key never displaces
// an earlier one, so ties go to the lower id.
void select_in_ranges(const float *keys, const Range *ranges, int32_t n_ranges, int32_t n_select, int32_t *ids) {
    uint32_t held_keys[ALPHAMOE_MAX_TOP_K];
    int32_t held = 0;
    for (int32_t r = 0; r < n_ranges; ++r) {
        for (int32_t e = ranges[r].begin; e < ranges[r].end; ++e) {
            const uint32_t key = rank_key(keys[e]);
            if (held == n_select && key <= held_keys[held - 1]) continue;
            int32_t at = held < n_select ? held++ : held - 1;
            while (at > 0 && held_keys[at - 1] < key) {
                held_keys[at] = held_keys[at - 1];
                ids[at] = ids[at - 1];
                --at;
            }
            held_keys[at] = key;
            ids[at] = e;
        }
    }
}

// Index of the best key of [begin, end) in ranking order (lower id on ties).
int32_t best_in(const float *keys, int32_t begin, int32_t end, int32_t skip) {
    int32_t best = -1;
    uint32_t best_key = 0;
    for (int32_t e = begin; e < end; ++e) {
        if (e == skip) continue;
        const uint32_t key = rank_key(keys[e]);
        if (best < 0 || key > best_key) {
            best = e;
            best_key = key;
        }
    }
    return best;
}

float group_score(const float *keys, int32_t begin, int32_t end, bool pair_sum) {
    const int32_t first = best_in(keys, begin, end, -1);
    if (!pair_sum || end - begin == 1) return keys[first];
    const int32_t second = best_in(keys, begin, end, first);
    return alphamoe_group_pair_score(keys[first], keys[second]);
}

}  // namespace

void select_top(const float *keys, int32_t n_candidates, int32_t n_select, int32_t *ids) {
    const Range all = {0, n_candidates};
    select_in_ranges(keys, &all, 1, n_select, ids);
}

void select_grouped(const alphamoe_params &p, const float *keys, int32_t *ids) {
    const int32_t G = p.num_groups;
    const int32_t size = p.num_experts / G;
    const bool pair_sum = (p.flags & ALPHAMOE_FLAG_CORRECTION_BIAS) != 0;
    // Groups in ranking order of their scores, ties to the lower index: the
    // composite key is unique, so any sort gives the same order.
    uint64_t order[ALPHAMOE_MAX_EXPERTS];
    for (int32_t g = 0; g < G; ++g) {
        const uint32_t key = rank_key(group_score(keys, g * size, (g + 1) * size, pair_sum));
        order[g] = (static_cast<uint64_t>(key) << 32) | static_cast<uint32_t>(G - 1 - g);
    }
    std::sort(order, order + G, [](uint64_t a, uint64_t b) { return a > b; });
    int32_t kept[ALPHAMOE_MAX_EXPERTS];
    for (int32_t i = 0; i < p.topk_groups; ++i) kept[i] = G - 1 - static_cast<int32_t>(order[i] & 0xffffffffu);
    std::sort(kept, kept + p.topk_groups);
    Range ranges[ALPHAMOE_MAX_EXPERTS];
    for (int32_t i = 0; i < p.topk_groups; ++i) ranges[i] = Range{kept[i] * size, (kept[i] + 1) * size};
    select_in_ranges(keys, ranges, p.topk_groups, p.top_k, ids);
}

void hashed_experts(const alphamoe_params &p, int32_t token_id, const int32_t *table, int32_t *ids) {
    const int32_t k = p.top_k;
    const bool known = token_id >= 0 && token_id < p.vocab_size;
    for (int32_t j = 0; j < k; ++j) {
        const int32_t e = known ? table[static_cast<int64_t>(token_id) * k + j] : -1;
        ids[j] = e >= 0 && e < p.num_experts ? e : -1;
    }
}

}  // namespace alphamoe
