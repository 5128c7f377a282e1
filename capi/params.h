// The router object: its parameters validated and normalized once, the
// plan capacity and workspace they need, and the argument checks every
// call makes, shared by the GPU launch and the host reference.
#ifndef ALPHAMOE_CAPI_PARAMS_H
#define ALPHAMOE_CAPI_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "alphamoe/router_diagnostics.h"

struct alphamoe_router {
    uint32_t magic;          // kRouterLive while the router is live (check_router)
    alphamoe_params params;  // validated and normalized (see alphamoe_router_get_params)
    int64_t capacity;        // sorted_token_ids elements for max_tokens
    int64_t workspace_bytes;
};

namespace alphamoe {

// Sizes of the published versions of each struct, oldest first. A version
// ends where the next one's first appended field begins.
constexpr size_t kParamsVersions[] = {offsetof(alphamoe_params, scoring), offsetof(alphamoe_params, vocab_size),
                                      sizeof(alphamoe_params)};
constexpr size_t kBuffersVersions[] = {offsetof(alphamoe_buffers, correction_bias),
                                       offsetof(alphamoe_buffers, token_ids), sizeof(alphamoe_buffers)};
constexpr size_t kSizesSizeV1 = sizeof(alphamoe_sizes);
constexpr size_t kDeviceAttributesVersions[] = {offsetof(alphamoe_device_attributes, max_cluster_ctas),
                                                sizeof(alphamoe_device_attributes)};
constexpr size_t kSelectionVersions[] = {offsetof(alphamoe_selection, cluster_ctas), sizeof(alphamoe_selection)};

constexpr int64_t kWorkspaceAlignment = 16;

// The magic word of a live router, and what destruction leaves in its place.
constexpr uint32_t kRouterLive = 0x524f4d41u;  // "AMOR"
constexpr uint32_t kRouterDestroyed = 0xdeadd00du;

// Validates the parameters and normalizes their defaults (a row stride,
// groups, scale or local range of 0) in place.
alphamoe_status validate_params(alphamoe_params *p);

// A live router of validated parameters, its plan capacity and workspace
// sized (ALPHAMOE_ERROR_MAX_TOKENS where the capacity passes int32).
alphamoe_status create_router(const alphamoe_params &p, alphamoe_router **out);

// Marks a live router destroyed and frees it.
void destroy_router(alphamoe_router *router);

// The sizes alphamoe_router_sizes reports.
alphamoe_sizes router_sizes(const alphamoe_router &router);

// The check every entry point that takes a router makes first:
// ALPHAMOE_ERROR_NULL_POINTER for NULL, ALPHAMOE_ERROR_INVALID_HANDLE where
// the magic word is not a live router's (best effort: router.h says why).
alphamoe_status check_router(const alphamoe_router *router);

inline bool shared_expert(const alphamoe_router &r) {
    return (r.params.flags & ALPHAMOE_FLAG_SHARED_EXPERT) != 0;
}

// Experts of the plan: the local experts with expert parallelism, else
// all routed experts.
inline int32_t plan_experts(const alphamoe_params &p) { return p.local_expert_count; }

// Experts topk_ids name, which expert parallelism splits: the physical
// experts with redundant experts, else the E logical ones.
inline int32_t routed_experts(const alphamoe_params &p) {
    return (p.flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) ? p.num_physical_experts : p.num_experts;
}

// Bytes of one logit of the router's logits_type.
inline int64_t logit_bytes(int32_t logits_type) { return logits_type == ALPHAMOE_LOGITS_F32 ? 4 : 2; }

// Checks everything of one call that does not need a GPU. On success
// *buffers holds the caller's buffers read through struct_size.
// need_workspace: the GPU path requires it, the host reference ignores it.
alphamoe_status validate_call(const alphamoe_router *router, int32_t num_tokens,
                              const void *logits, const alphamoe_buffers *in,
                              bool need_workspace, alphamoe_buffers *buffers);

}  // namespace alphamoe

#endif
