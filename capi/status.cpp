// The text of the public enums' values: status messages and specialization
// names.
#include "status.h"

#include "alphamoe/router_diagnostics.h"

namespace alphamoe {

const char *status_message(int status) {
    switch (status) {
    case ALPHAMOE_OK: return "ALPHAMOE_OK: success";
    case ALPHAMOE_ERROR_NULL_POINTER: return "ALPHAMOE_ERROR_NULL_POINTER: a required pointer is NULL";
    case ALPHAMOE_ERROR_STRUCT_SIZE:
        return "ALPHAMOE_ERROR_STRUCT_SIZE: struct_size is smaller than the first version of the struct "
               "or ends inside a field";
    case ALPHAMOE_ERROR_NUM_EXPERTS: return "ALPHAMOE_ERROR_NUM_EXPERTS: num_experts must be in [1, 2048]";
    case ALPHAMOE_ERROR_TOP_K: return "ALPHAMOE_ERROR_TOP_K: top_k must be in [1, min(num_experts, 32)]";
    case ALPHAMOE_ERROR_BLOCK_M: return "ALPHAMOE_ERROR_BLOCK_M: block_m must be in [1, 256]";
    case ALPHAMOE_ERROR_MAX_TOKENS:
        return "ALPHAMOE_ERROR_MAX_TOKENS: max_tokens must be >= 0 and its plan must fit int32 "
               "(max_tokens * top_k and the padded capacity at most 2^31 - 1)";
    case ALPHAMOE_ERROR_NUM_TOKENS: return "ALPHAMOE_ERROR_NUM_TOKENS: num_tokens must be in [0, max_tokens]";
    case ALPHAMOE_ERROR_SHARED_EXPERT:
        return "ALPHAMOE_ERROR_SHARED_EXPERT: shared-expert mode needs top_k >= 2, softmax scoring and "
               "no expert groups";
    case ALPHAMOE_ERROR_ROW_STRIDE:
        return "ALPHAMOE_ERROR_ROW_STRIDE: logits_row_stride must be 0 or >= num_experts, and the "
               "logits extent must fit 64 bits";
    case ALPHAMOE_ERROR_FLAGS: return "ALPHAMOE_ERROR_FLAGS: flags has bits outside ALPHAMOE_FLAG_ALL";
    case ALPHAMOE_ERROR_SPECIALIZATION:
        return "ALPHAMOE_ERROR_SPECIALIZATION: force_specialization is not an alphamoe_specialization";
    case ALPHAMOE_ERROR_ALIGNMENT:
        return "ALPHAMOE_ERROR_ALIGNMENT: buffers must be 4-byte aligned and the workspace "
               "workspace_alignment-aligned";
    case ALPHAMOE_ERROR_CAPACITY:
        return "ALPHAMOE_ERROR_CAPACITY: an output buffer is smaller than alphamoe_router_sizes says";
    case ALPHAMOE_ERROR_WORKSPACE:
        return "ALPHAMOE_ERROR_WORKSPACE: the workspace is smaller than alphamoe_router_sizes says";
    case ALPHAMOE_ERROR_NO_DRIVER:
        return "ALPHAMOE_ERROR_NO_DRIVER: the CUDA driver (libcuda.so.1) is missing or too old";
    case ALPHAMOE_ERROR_NO_DEVICE: return "ALPHAMOE_ERROR_NO_DEVICE: no such CUDA device";
    case ALPHAMOE_ERROR_NO_IMAGE:
        return "ALPHAMOE_ERROR_NO_IMAGE: this library holds no kernel image for the device's architecture";
    case ALPHAMOE_ERROR_UNSUPPORTED_DEVICE:
        return "ALPHAMOE_ERROR_UNSUPPORTED_DEVICE: the device cannot run this specialization "
               "(no cooperative launch, no CTA fits on a multiprocessor, or, for large, 2^27 or more "
               "pairs per group of multiprocessors)";
    case ALPHAMOE_ERROR_CUDA:
        return "ALPHAMOE_ERROR_CUDA: a CUDA driver call failed (possibly a sticky error from earlier work)";
    case ALPHAMOE_ERROR_OUT_OF_MEMORY: return "ALPHAMOE_ERROR_OUT_OF_MEMORY: a host allocation failed";
    case ALPHAMOE_ERROR_INVALID_ARGUMENT:
        return "ALPHAMOE_ERROR_INVALID_ARGUMENT: an index, capacity or reserved argument is out of range";
    case ALPHAMOE_ERROR_SCORING:
        return "ALPHAMOE_ERROR_SCORING: scoring must be ALPHAMOE_SCORING_SOFTMAX, _SIGMOID or "
               "_SQRT_SOFTPLUS, and a correction bias needs sigmoid or sqrt-softplus scoring";
    case ALPHAMOE_ERROR_LOGITS_TYPE:
        return "ALPHAMOE_ERROR_LOGITS_TYPE: logits_type must be ALPHAMOE_LOGITS_F32, _BF16 or _F16";
    case ALPHAMOE_ERROR_GROUPS:
        return "ALPHAMOE_ERROR_GROUPS: num_groups must be 0 or divide num_experts, topk_groups must be "
               "in [0, num_groups], and the kept groups must hold at least top_k experts";
    case ALPHAMOE_ERROR_SCALING_FACTOR:
        return "ALPHAMOE_ERROR_SCALING_FACTOR: routed_scaling_factor must be finite and > 0 (0 means 1)";
    case ALPHAMOE_ERROR_EXPERT_PARALLEL:
        return "ALPHAMOE_ERROR_EXPERT_PARALLEL: the local experts must be a range inside [0, num_experts) "
               "(local_expert_count 0 and local_expert_begin 0 for none), or with an expert map "
               "local_expert_count in [1, num_experts] and local_expert_begin 0 (num_physical_experts "
               "for num_experts with redundant experts)";
    case ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR:
        return "ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR: the GPU kernels of this library do not implement this "
               "routing flavour; alphamoe_route_host does";
    case ALPHAMOE_ERROR_INVALID_HANDLE:
        return "ALPHAMOE_ERROR_INVALID_HANDLE: the router is not a live router (destroyed, or not made by "
               "alphamoe_router_create)";
    case ALPHAMOE_ERROR_HASH_ROUTING:
        return "ALPHAMOE_ERROR_HASH_ROUTING: vocab_size must be >= 1 with ALPHAMOE_FLAG_HASH_ROUTING and 0 "
               "without it; hash routing takes no expert groups, no correction bias and no shared expert";
    case ALPHAMOE_ERROR_REDUNDANT_EXPERTS:
        return "ALPHAMOE_ERROR_REDUNDANT_EXPERTS: with ALPHAMOE_FLAG_REDUNDANT_EXPERTS num_physical_experts "
               "must be in [1, 2048] and replica_slots in [1, num_physical_experts]; both 0 without it";
    }
    return "ALPHAMOE_ERROR_UNKNOWN: not an alphamoe_status value";
}

const char *specialization_name_of(int specialization) {
    switch (specialization) {
    case ALPHAMOE_SPECIALIZATION_AUTO: return "auto";
    case ALPHAMOE_SPECIALIZATION_TINY: return "tiny";
    case ALPHAMOE_SPECIALIZATION_SMALL: return "small";
    case ALPHAMOE_SPECIALIZATION_LARGE: return "large";
    }
    return nullptr;
}

}  // namespace alphamoe
