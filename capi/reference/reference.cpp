// route_on_host: the contract, executed on the CPU in the plainest
// way that is still fast enough for millions of pairs. Every flavour runs
// here; scoring, selection and the plan live in scoring.cpp, topk.cpp and
// plan.cpp beside this file.
#include "reference.h"

#include "plan.h"
#include "scoring.h"
#include "topk.h"

namespace alphamoe {

void route_on_host(const alphamoe_router &router, int32_t num_tokens, const void *logits, const alphamoe_buffers &b) {
    if (num_tokens == 0) {
        *b.num_tokens_post_padded = 0;
        return;
    }
    const alphamoe_params &p = router.params;
    const int32_t E = p.num_experts, k = p.top_k;
    const bool shared = shared_expert(router);
    const int32_t n_candidates = shared ? E - 1 : E;
    const int32_t n_select = shared ? k - 1 : k;

    int32_t local_of[ALPHAMOE_MAX_EXPERTS];
    local_expert_ids(p, b.expert_map, local_of);
    float row_storage[ALPHAMOE_MAX_EXPERTS];
    float key_storage[ALPHAMOE_MAX_EXPERTS];
    const bool hashed = (p.flags & ALPHAMOE_FLAG_HASH_ROUTING) != 0;
    for (int32_t t = 0; t < num_tokens; ++t) {
        const float *row = logits_row(p, logits, t, row_storage);
        int32_t *ids = b.topk_ids + static_cast<int64_t>(t) * k;
        if (hashed) {
            hashed_experts(p, b.token_ids[t], b.hash_table, ids);
        } else {
            const float *keys = ranking_keys(p, row, b.correction_bias, key_storage);
            if (p.num_groups > 1) select_grouped(p, keys, ids);
            else select_top(keys, n_candidates, n_select, ids);
            if (shared) ids[k - 1] = E - 1;
        }
        gate_weights(p, row, ids, b.topk_weights + static_cast<int64_t>(t) * k);
    }
    // The weights are the logical choice's; only the ids move to replicas.
    if (p.flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) map_to_replicas(p, num_tokens, b);
    write_plan(router, num_tokens, local_of, b);
}

}  // namespace alphamoe
