// Router creation, parameter validation and sizing, and the checks of a
// call's arguments: host only.
#include "params.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "route_args.h"
#include "struct_io.h"

namespace alphamoe {
namespace {

// The fields of the first version: shape, flags, stride, specialization.
// The stride check needs the element size, so logits_type is checked here.
alphamoe_status validate_shape(alphamoe_params *p) {
    if (p->num_experts < 1 || p->num_experts > ALPHAMOE_MAX_EXPERTS) return ALPHAMOE_ERROR_NUM_EXPERTS;
    const int32_t max_k = p->num_experts < ALPHAMOE_MAX_TOP_K ? p->num_experts : ALPHAMOE_MAX_TOP_K;
    if (p->top_k < 1 || p->top_k > max_k) return ALPHAMOE_ERROR_TOP_K;
    if (p->block_m < 1 || p->block_m > ALPHAMOE_MAX_BLOCK_M) return ALPHAMOE_ERROR_BLOCK_M;
    if (p->flags & ~ALPHAMOE_FLAG_ALL) return ALPHAMOE_ERROR_FLAGS;
    if ((p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) && p->top_k < 2) return ALPHAMOE_ERROR_SHARED_EXPERT;
    if (p->force_specialization < ALPHAMOE_SPECIALIZATION_AUTO ||
        p->force_specialization > ALPHAMOE_SPECIALIZATION_LARGE)
        return ALPHAMOE_ERROR_SPECIALIZATION;
    if (p->max_tokens < 0) return ALPHAMOE_ERROR_MAX_TOKENS;
    // Pair indices, the sentinel and plan positions are int32.
    const int64_t pairs = static_cast<int64_t>(p->max_tokens) * p->top_k;
    if (pairs > INT32_MAX) return ALPHAMOE_ERROR_MAX_TOKENS;
    if (p->logits_type < ALPHAMOE_LOGITS_F32 || p->logits_type > ALPHAMOE_LOGITS_F16)
        return ALPHAMOE_ERROR_LOGITS_TYPE;
    if (p->logits_row_stride == 0) p->logits_row_stride = p->num_experts;
    if (p->logits_row_stride < p->num_experts) return ALPHAMOE_ERROR_ROW_STRIDE;
    // The last row's byte offset must fit a signed 64-bit pointer offset.
    const int64_t rows = p->max_tokens > 1 ? p->max_tokens : 1;
    if (p->logits_row_stride > INT64_MAX / logit_bytes(p->logits_type) / rows)
        return ALPHAMOE_ERROR_ROW_STRIDE;
    return ALPHAMOE_OK;
}

// Scoring, groups and scaling: how experts are chosen and weighted.
alphamoe_status validate_scoring(alphamoe_params *p) {
    if (p->scoring != ALPHAMOE_SCORING_SOFTMAX && p->scoring != ALPHAMOE_SCORING_SIGMOID &&
        p->scoring != ALPHAMOE_SCORING_SQRT_SOFTPLUS)
        return ALPHAMOE_ERROR_SCORING;
    // A bias on softmax scores would rank by full-row probabilities, which
    // no two implementations compute bit for bit.
    if ((p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) && p->scoring == ALPHAMOE_SCORING_SOFTMAX)
        return ALPHAMOE_ERROR_SCORING;

    const int32_t E = p->num_experts;
    if (p->num_groups < 0 || p->num_groups > E) return ALPHAMOE_ERROR_GROUPS;
    const int32_t groups = p->num_groups > 1 ? p->num_groups : 1;
    if (E % groups != 0) return ALPHAMOE_ERROR_GROUPS;
    if (p->topk_groups < 0 || p->topk_groups > groups) return ALPHAMOE_ERROR_GROUPS;
    const int32_t kept = p->topk_groups > 0 ? p->topk_groups : groups;
    // The kept groups must hold k experts to choose from.
    if (static_cast<int64_t>(kept) * (E / groups) < p->top_k) return ALPHAMOE_ERROR_GROUPS;
    p->num_groups = groups;
    p->topk_groups = kept;

    // Slot k-1 is a fixed expert outside any ranking: defined for the
    // softmax of the selected logits only.
    if ((p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) && (p->scoring != ALPHAMOE_SCORING_SOFTMAX || groups > 1))
        return ALPHAMOE_ERROR_SHARED_EXPERT;

    const float scale = p->routed_scaling_factor;
    if (!isfinite(scale) || scale < 0.0f) return ALPHAMOE_ERROR_SCALING_FACTOR;
    if (scale == 0.0f) p->routed_scaling_factor = 1.0f;
    return ALPHAMOE_OK;
}

// Hash routing: a table of vocab_size rows chooses the experts, so nothing
// that steers a ranking (groups, a bias) and no fixed slot comes with it.
alphamoe_status validate_hash_routing(const alphamoe_params *p) {
    if (!(p->flags & ALPHAMOE_FLAG_HASH_ROUTING)) return p->vocab_size == 0 ? ALPHAMOE_OK : ALPHAMOE_ERROR_HASH_ROUTING;
    if (p->vocab_size < 1 || p->num_groups > 1 ||
        (p->flags & (ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_SHARED_EXPERT)))
        return ALPHAMOE_ERROR_HASH_ROUTING;
    return ALPHAMOE_OK;
}

// Redundant experts: P physical experts, at most R replicas per logical one.
alphamoe_status validate_redundant_experts(const alphamoe_params *p) {
    const int32_t P = p->num_physical_experts, R = p->replica_slots;
    if (!(p->flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS))
        return P == 0 && R == 0 ? ALPHAMOE_OK : ALPHAMOE_ERROR_REDUNDANT_EXPERTS;
    if (P < 1 || P > ALPHAMOE_MAX_EXPERTS || R < 1 || R > P) return ALPHAMOE_ERROR_REDUNDANT_EXPERTS;
    return ALPHAMOE_OK;
}

// Expert parallelism: which of the routed experts (logical, or physical
// with redundant experts) the plan covers.
alphamoe_status validate_expert_parallel(alphamoe_params *p) {
    const int64_t E = routed_experts(*p);
    const int64_t begin = p->local_expert_begin, count = p->local_expert_count;
    if (p->flags & ALPHAMOE_FLAG_EXPERT_MAP) {
        // The map says everything; a range beside it would say it twice.
        if (count < 1 || count > E || begin != 0) return ALPHAMOE_ERROR_EXPERT_PARALLEL;
        return ALPHAMOE_OK;
    }
    if (count == 0) {
        if (begin != 0) return ALPHAMOE_ERROR_EXPERT_PARALLEL;
        p->local_expert_count = routed_experts(*p);
        return ALPHAMOE_OK;
    }
    if (count < 0 || begin < 0 || begin + count > E) return ALPHAMOE_ERROR_EXPERT_PARALLEL;
    return ALPHAMOE_OK;
}

// Contract section 5: the tight bound on the padded plan length.
int64_t plan_capacity(int64_t pairs, int64_t experts, int64_t block_m) {
    const int64_t nonempty = pairs < experts ? pairs : experts;
    const int64_t blocks = nonempty + (pairs - nonempty) / block_m;
    return blocks * block_m;
}

alphamoe_extent int32_extent(int64_t elements) {
    alphamoe_extent x;
    x.elements = elements;
    x.bytes = elements * 4;
    return x;
}

bool misaligned(const void *ptr, uintptr_t alignment) {
    return reinterpret_cast<uintptr_t>(ptr) % alignment != 0;
}

}  // namespace

alphamoe_status validate_params(alphamoe_params *p) {
    alphamoe_status s = validate_shape(p);
    if (s == ALPHAMOE_OK) s = validate_scoring(p);
    if (s == ALPHAMOE_OK) s = validate_redundant_experts(p);
    if (s == ALPHAMOE_OK) s = validate_expert_parallel(p);
    if (s == ALPHAMOE_OK) s = validate_hash_routing(p);
    if (s == ALPHAMOE_OK && (p->reserved != 0 || p->reserved2 != 0)) s = ALPHAMOE_ERROR_INVALID_ARGUMENT;
    return s;
}

alphamoe_status create_router(const alphamoe_params &p, alphamoe_router **out) {
    const int64_t pairs = static_cast<int64_t>(p.max_tokens) * p.top_k;
    const int64_t capacity = plan_capacity(pairs, plan_experts(p), p.block_m);
    if (capacity > INT32_MAX) return ALPHAMOE_ERROR_MAX_TOKENS;

    alphamoe_router *r = static_cast<alphamoe_router *>(calloc(1, sizeof(alphamoe_router)));
    if (r == nullptr) return ALPHAMOE_ERROR_OUT_OF_MEMORY;
    r->magic = kRouterLive;
    r->params = p;
    r->params.struct_size = sizeof(alphamoe_params);
    r->capacity = capacity;
    // Per-expert counts for all E global experts (all P physical ones with
    // redundant experts, when more): enough for any local subset, whatever
    // ids a kernel counts in.
    const int32_t counted = routed_experts(p) > p.num_experts ? routed_experts(p) : p.num_experts;
    const int64_t bytes = alphamoe_workspace_words(counted, kPhaseClocks) * 4;
    r->workspace_bytes = (bytes + 127) / 128 * 128;
    *out = r;
    return ALPHAMOE_OK;
}

void destroy_router(alphamoe_router *router) {
    router->magic = kRouterDestroyed;
    free(router);
}

alphamoe_sizes router_sizes(const alphamoe_router &router) {
    const alphamoe_params &p = router.params;
    const int64_t pairs = static_cast<int64_t>(p.max_tokens) * p.top_k;
    const int64_t L = plan_experts(p);
    alphamoe_sizes z = {};
    z.struct_size = sizeof(z);
    z.topk_ids = int32_extent(pairs);
    z.topk_weights = int32_extent(pairs);
    z.sorted_token_ids = int32_extent(router.capacity);
    z.expert_ids = int32_extent(router.capacity / p.block_m);
    z.num_tokens_post_padded = int32_extent(1);
    z.expert_counts = int32_extent(L);
    z.expert_offsets = int32_extent(L + 1);
    z.pair_to_sorted = int32_extent(pairs);
    z.workspace.elements = router.workspace_bytes;
    z.workspace.bytes = router.workspace_bytes;
    z.workspace_alignment = kWorkspaceAlignment;
    return z;
}

alphamoe_status check_router(const alphamoe_router *router) {
    if (router == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    return router->magic == kRouterLive ? ALPHAMOE_OK : ALPHAMOE_ERROR_INVALID_HANDLE;
}

alphamoe_status validate_call(const alphamoe_router *router, int32_t num_tokens,
                              const void *logits, const alphamoe_buffers *in,
                              bool need_workspace, alphamoe_buffers *b) {
    alphamoe_status s = check_router(router);
    if (s != ALPHAMOE_OK) return s;
    s = read_struct(in, kBuffersVersions, b);
    if (s != ALPHAMOE_OK) return s;
    const alphamoe_params &p = router->params;
    if (num_tokens < 0 || num_tokens > p.max_tokens) return ALPHAMOE_ERROR_NUM_TOKENS;

    // With no tokens nothing token-shaped is read or written: an empty
    // tensor's NULL data pointer is fine there, and so are NULL per-expert
    // inputs, which only token rows would read.
    const bool has_tokens = num_tokens > 0;
    const bool needs_bias = has_tokens && (p.flags & ALPHAMOE_FLAG_CORRECTION_BIAS);
    const bool needs_map = has_tokens && (p.flags & ALPHAMOE_FLAG_EXPERT_MAP);
    const bool needs_table = has_tokens && (p.flags & ALPHAMOE_FLAG_HASH_ROUTING);
    const bool needs_replicas = has_tokens && (p.flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS);
    if (has_tokens && (logits == nullptr || b->topk_ids == nullptr || b->topk_weights == nullptr))
        return ALPHAMOE_ERROR_NULL_POINTER;
    if ((needs_bias && b->correction_bias == nullptr) || (needs_map && b->expert_map == nullptr) ||
        (needs_table && (b->token_ids == nullptr || b->hash_table == nullptr)) ||
        (needs_replicas && (b->logical_to_physical == nullptr || b->replica_count == nullptr)))
        return ALPHAMOE_ERROR_NULL_POINTER;
    // A plan sized for no pairs has empty arrays, which allocators hand out
    // as NULL.
    const bool has_plan = router->capacity > 0;
    if ((has_plan && (b->sorted_token_ids == nullptr || b->expert_ids == nullptr)) ||
        b->num_tokens_post_padded == nullptr)
        return ALPHAMOE_ERROR_NULL_POINTER;
    if (need_workspace && b->workspace == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;

    if (misaligned(logits, static_cast<uintptr_t>(logit_bytes(p.logits_type))))
        return ALPHAMOE_ERROR_ALIGNMENT;
    const void *word_aligned[] = {b->topk_ids,
                                  b->topk_weights,
                                  b->sorted_token_ids,
                                  b->expert_ids,
                                  b->num_tokens_post_padded,
                                  b->expert_counts,
                                  b->expert_offsets,
                                  b->pair_to_sorted,
                                  needs_bias ? b->correction_bias : nullptr,
                                  needs_map ? b->expert_map : nullptr,
                                  needs_table ? b->token_ids : nullptr,
                                  needs_table ? b->hash_table : nullptr,
                                  needs_replicas ? b->logical_to_physical : nullptr,
                                  needs_replicas ? b->replica_count : nullptr,
                                  needs_replicas ? b->physical_load : nullptr};
    for (const void *ptr : word_aligned)
        if (misaligned(ptr, 4)) return ALPHAMOE_ERROR_ALIGNMENT;
    if (need_workspace && misaligned(b->workspace, kWorkspaceAlignment)) return ALPHAMOE_ERROR_ALIGNMENT;

    if (b->sorted_token_ids_capacity < router->capacity ||
        b->expert_ids_capacity < router->capacity / p.block_m)
        return ALPHAMOE_ERROR_CAPACITY;
    if (need_workspace && b->workspace_bytes < static_cast<size_t>(router->workspace_bytes))
        return ALPHAMOE_ERROR_WORKSPACE;
    return ALPHAMOE_OK;
}

}  // namespace alphamoe
