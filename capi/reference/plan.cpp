#include "plan.h"

#include <string.h>

namespace alphamoe {

void local_expert_ids(const alphamoe_params &p, const int32_t *expert_map, int32_t *local_of) {
    const int32_t E = routed_experts(p), L = p.local_expert_count;
    for (int32_t g = 0; g < E; ++g) {
        int32_t local;
        if (p.flags & ALPHAMOE_FLAG_EXPERT_MAP) local = expert_map[g];
        else local = g - p.local_expert_begin;
        local_of[g] = (local >= 0 && local < L) ? local : -1;
    }
}

void map_to_replicas(const alphamoe_params &p, int32_t num_tokens, const alphamoe_buffers &b) {
    const int32_t P = p.num_physical_experts, R = p.replica_slots;
    const int64_t pairs = static_cast<int64_t>(num_tokens) * p.top_k;
    for (int64_t pair = 0; pair < pairs; ++pair) {
        const int32_t e = b.topk_ids[pair];
        if (e < 0) continue;  // already a pair of no expert
        // The tables are the caller's, unchecked: a count outside [1, R] or
        // an id outside [0, P) makes a pair of no expert, never a read
        // outside the E rows of R entries.
        const int32_t c = b.replica_count[e];
        int32_t q = -1;
        if (c >= 1 && c <= R) q = b.logical_to_physical[static_cast<int64_t>(e) * R + pair % c];
        if (q < 0 || q >= P) q = -1;
        b.topk_ids[pair] = q;
        if (q >= 0 && b.physical_load)  // a running counter: wraps like the caller's int32 would
            b.physical_load[q] = static_cast<int32_t>(static_cast<uint32_t>(b.physical_load[q]) + 1u);
    }
}

void write_plan(const alphamoe_router &router, int32_t num_tokens, const int32_t *local_of,
                const alphamoe_buffers &b) {
    const alphamoe_params &p = router.params;
    const int32_t L = plan_experts(p), k = p.top_k, bm = p.block_m;
    const int32_t pairs = num_tokens * k;  // also the sentinel
    int32_t count[ALPHAMOE_MAX_EXPERTS] = {};
    int32_t offset[ALPHAMOE_MAX_EXPERTS + 1] = {};
    int32_t next[ALPHAMOE_MAX_EXPERTS];
    // Without expert parallelism every expert is its own local id: no
    // lookup per pair on the path most calls take.
    if (L == routed_experts(p) && p.local_expert_begin == 0 && !(p.flags & ALPHAMOE_FLAG_EXPERT_MAP)) local_of = nullptr;
    // A pair of no expert (id -1: hash routing's or a replica table's) is
    // planned nowhere.
    const auto local_of_pair = [&](int32_t pair) {
        const int32_t id = b.topk_ids[pair];
        return id < 0 ? -1 : local_of ? local_of[id] : id;
    };
    for (int32_t pair = 0; pair < pairs; ++pair) {
        const int32_t local = local_of_pair(pair);
        if (local >= 0) ++count[local];
    }
    // Groups in local expert order, each padded to a multiple of block_m.
    // A count may be within block_m - 1 of INT32_MAX: rounding it up takes
    // 64 bits. The sums fit int32 (the live length is at most the sized
    // capacity).
    for (int32_t l = 0; l < L; ++l)
        offset[l + 1] = static_cast<int32_t>(offset[l] + (static_cast<int64_t>(count[l]) + bm - 1) / bm * bm);
    const int32_t live_length = offset[L];

    // Pairs in ascending index fill their group from the front; the rest of
    // each group is sentinel. Pairs of other ranks have no position.
    memcpy(next, offset, sizeof(int32_t) * static_cast<size_t>(L));
    for (int32_t pair = 0; pair < pairs; ++pair) {
        const int32_t local = local_of_pair(pair);
        const int32_t pos = local >= 0 ? next[local]++ : -1;
        if (pos >= 0) b.sorted_token_ids[pos] = pair;
        if (b.pair_to_sorted) b.pair_to_sorted[pair] = pos;
    }
    for (int32_t l = 0; l < L; ++l) {
        for (int32_t pos = next[l]; pos < offset[l + 1]; ++pos) b.sorted_token_ids[pos] = pairs;
        for (int32_t block = offset[l] / bm; block < offset[l + 1] / bm; ++block) b.expert_ids[block] = l;
        if (b.expert_counts) b.expert_counts[l] = count[l];
        if (b.expert_offsets) b.expert_offsets[l] = offset[l];
    }
    if (b.expert_offsets) b.expert_offsets[L] = live_length;
    *b.num_tokens_post_padded = live_length;
    if (p.flags & ALPHAMOE_FLAG_TAIL_FILL) {
        for (int64_t pos = live_length; pos < router.capacity; ++pos) b.sorted_token_ids[pos] = pairs;
        for (int64_t block = live_length / bm; block < router.capacity / bm; ++block) b.expert_ids[block] = -1;
    }
}

}  // namespace alphamoe
