/*
 * AlphaMoE router: top-k expert selection plus the block-aligned route plan
 * of a Mixture-of-Experts layer, in one kernel launch.
 *
 * Plain C99. Including this header needs no CUDA header: streams are passed
 * as `struct CUstream_st *`, which is what both `cudaStream_t` and `CUstream`
 * are. Every entry point returns an alphamoe_status; on any status but
 * ALPHAMOE_OK nothing has been launched and no output byte has changed.
 *
 * Structs passed in carry their own size in `struct_size` (set it to
 * sizeof(the struct)); later versions only append fields, so a caller
 * built against an older header keeps working: fields past its struct_size
 * read as zero, and zero always means the earlier behaviour. A struct_size
 * must be the size of a published version of the struct (or larger than
 * the newest); one that ends inside a field is rejected.
 */
#ifndef ALPHAMOE_ROUTER_H
#define ALPHAMOE_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "alphamoe/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ALPHAMOE_API
#else
#define ALPHAMOE_API __attribute__((visibility("default")))
#endif

struct CUstream_st;

/* ------------------------------------------------------------------ */
/* Status                                                              */
/* ------------------------------------------------------------------ */

typedef enum alphamoe_status {
    ALPHAMOE_OK = 0,
    /* invalid arguments: rejected before any work, nothing written */
    ALPHAMOE_ERROR_NULL_POINTER = 1,     /* a required pointer is NULL */
    ALPHAMOE_ERROR_STRUCT_SIZE = 2,      /* struct_size smaller than the first version of the struct */
    ALPHAMOE_ERROR_NUM_EXPERTS = 3,      /* num_experts outside [1, 2048] */
    ALPHAMOE_ERROR_TOP_K = 4,            /* top_k outside [1, min(num_experts, 32)] */
    ALPHAMOE_ERROR_BLOCK_M = 5,          /* block_m outside [1, 256] */
    ALPHAMOE_ERROR_MAX_TOKENS = 6,       /* max_tokens < 0, or the plan for it would not fit int32 */
    ALPHAMOE_ERROR_NUM_TOKENS = 7,       /* num_tokens outside [0, max_tokens] */
    ALPHAMOE_ERROR_SHARED_EXPERT = 8,    /* shared-expert mode needs top_k >= 2 */
    ALPHAMOE_ERROR_ROW_STRIDE = 9,       /* logits row stride < num_experts, or too large */
    ALPHAMOE_ERROR_FLAGS = 10,           /* unknown bits in flags */
    ALPHAMOE_ERROR_SPECIALIZATION = 11,  /* unknown forced specialization */
    ALPHAMOE_ERROR_ALIGNMENT = 12,       /* a buffer is not aligned as required */
    ALPHAMOE_ERROR_CAPACITY = 13,        /* an output buffer is smaller than the sizing says */
    ALPHAMOE_ERROR_WORKSPACE = 14,       /* workspace smaller than the sizing says */
    /* environment */
    ALPHAMOE_ERROR_NO_DRIVER = 15,       /* libcuda.so.1 missing or lacking a needed entry point */
    ALPHAMOE_ERROR_NO_DEVICE = 16,       /* no CUDA device, or no such device */
    ALPHAMOE_ERROR_NO_IMAGE = 17,        /* this library holds no kernel image for the device */
    ALPHAMOE_ERROR_UNSUPPORTED_DEVICE = 18, /* the device cannot run the router (no cooperative launch) */
    ALPHAMOE_ERROR_CUDA = 19,            /* a CUDA driver call failed (includes earlier sticky errors) */
    ALPHAMOE_ERROR_OUT_OF_MEMORY = 20,   /* a host allocation failed */
    ALPHAMOE_ERROR_INVALID_ARGUMENT = 21, /* another argument out of range (an index, a capacity, a reserved field) */
    /* routing flavours: invalid arguments, rejected before any work */
    ALPHAMOE_ERROR_SCORING = 22,         /* unknown scoring, or a correction bias with softmax scoring */
    ALPHAMOE_ERROR_LOGITS_TYPE = 23,     /* unknown logits_type */
    ALPHAMOE_ERROR_GROUPS = 24,          /* num_groups / topk_groups invalid, or the kept groups hold < top_k experts */
    ALPHAMOE_ERROR_SCALING_FACTOR = 25,  /* routed_scaling_factor negative, infinite or NaN */
    ALPHAMOE_ERROR_EXPERT_PARALLEL = 26, /* local expert range or expert map settings invalid */
    /* valid parameters this library's GPU kernels do not implement (yet):
     * alphamoe_route and alphamoe_router_select refuse them, the CPU
     * reference runs them */
    ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR = 27,
    /* misuse */
    ALPHAMOE_ERROR_INVALID_HANDLE = 28,  /* the router is not a live router (destroyed, or never created) */
    /* appended in version 0.3: an invalid argument, rejected before any work */
    ALPHAMOE_ERROR_HASH_ROUTING = 29,    /* vocab_size or a setting hash routing does not take */
    ALPHAMOE_ERROR_REDUNDANT_EXPERTS = 30 /* num_physical_experts or replica_slots invalid */
} alphamoe_status;

/* A fixed English message naming the status, e.g. "ALPHAMOE_ERROR_TOP_K:
 * top_k must be in [1, min(num_experts, 32)]". Never NULL. */
ALPHAMOE_API const char *alphamoe_status_string(alphamoe_status status);

/* The library's version as ALPHAMOE_VERSION_NUMBER encodes it; compare with
 * the macro to detect a header/library mismatch. */
ALPHAMOE_API uint32_t alphamoe_version_number(void);
ALPHAMOE_API const char *alphamoe_version_string(void);

/* ------------------------------------------------------------------ */
/* Parameters                                                          */
/* ------------------------------------------------------------------ */

#define ALPHAMOE_MAX_EXPERTS 2048
#define ALPHAMOE_MAX_TOP_K 32
#define ALPHAMOE_MAX_BLOCK_M 256

/* flags */
/* Slot top_k-1 is always expert num_experts-1 (the shared expert). */
#define ALPHAMOE_FLAG_SHARED_EXPERT 0x1u
/* Fill sorted_token_ids with the sentinel and expert_ids with -1 from the
 * live length up to the sized capacity. */
#define ALPHAMOE_FLAG_TAIL_FILL 0x2u
/* Programmatic dependent launch (sm_90 and newer): the launch may overlap
 * the tail of the preceding kernel on the stream; logits are read only
 * after that kernel completes. */
#define ALPHAMOE_FLAG_PDL 0x4u
/* Weights are not renormalized over the selected experts: softmax scoring
 * gives each selected expert its probability over all num_experts logits,
 * sigmoid and sqrt-softplus scoring its score. */
#define ALPHAMOE_FLAG_NO_RENORMALIZE 0x8u
/* Sigmoid or sqrt-softplus scoring: buffers.correction_bias (fp32
 * [num_experts]) is added to the scores for choosing experts and groups,
 * never to weights. */
#define ALPHAMOE_FLAG_CORRECTION_BIAS 0x10u
/* Expert parallelism by map: buffers.expert_map (int32 [num_experts]) gives
 * each global expert its local id in [0, local_expert_count), or -1 when
 * another rank owns it. */
#define ALPHAMOE_FLAG_EXPERT_MAP 0x20u
/* Hash routing (DeepSeek-V4's first layers): token t's k experts are row
 * buffers.token_ids[t] of buffers.hash_table (int32 [vocab_size, k]), not
 * a ranking; the weights are the scoring's at those experts. A token id
 * outside [0, vocab_size) or an entry outside [0, num_experts) makes a pair
 * of no expert: id -1, weight 0, in no group (docs/contract.md). */
#define ALPHAMOE_FLAG_HASH_ROUTING 0x40u
/* Redundant experts (expert-parallel load balancing, vLLM's EPLB): logical
 * expert e has buffers.replica_count[e] replicas among num_physical_experts
 * physical experts; pair p = t*k + j of expert e takes replica
 * p % replica_count[e], physical id buffers.logical_to_physical[e *
 * replica_slots + replica]. topk_ids and the plan are over the physical
 * experts, the weights are the logical choice's. A replica count outside
 * [1, replica_slots] or an id outside [0, num_physical_experts) makes a
 * pair of no expert (docs/contract.md). */
#define ALPHAMOE_FLAG_REDUNDANT_EXPERTS 0x80u
#define ALPHAMOE_FLAG_ALL                                                                      \
    (ALPHAMOE_FLAG_SHARED_EXPERT | ALPHAMOE_FLAG_TAIL_FILL | ALPHAMOE_FLAG_PDL |                \
     ALPHAMOE_FLAG_NO_RENORMALIZE | ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_EXPERT_MAP |   \
     ALPHAMOE_FLAG_HASH_ROUTING | ALPHAMOE_FLAG_REDUNDANT_EXPERTS)

/* How logits become scores (alphamoe_params.scoring). */
typedef enum alphamoe_scoring {
    ALPHAMOE_SCORING_SOFTMAX = 0, /* weights from the softmax of the logits (version 0.1's) */
    ALPHAMOE_SCORING_SIGMOID = 1, /* score = sigmoid(logit), per expert */
    /* score = sqrt(softplus(logit)), softplus(x) = log(1 + e^x), per
     * expert (DeepSeek-V4); appended in version 0.3 */
    ALPHAMOE_SCORING_SQRT_SOFTPLUS = 2
} alphamoe_scoring;

/* Element type of the logits (alphamoe_params.logits_type). Every logit is
 * converted exactly to fp32 first; everything after that is fp32. */
typedef enum alphamoe_logits_type {
    ALPHAMOE_LOGITS_F32 = 0,
    ALPHAMOE_LOGITS_BF16 = 1,
    ALPHAMOE_LOGITS_F16 = 2 /* IEEE binary16 */
} alphamoe_logits_type;

typedef struct alphamoe_params {
    size_t struct_size;          /* sizeof(alphamoe_params) */
    int32_t num_experts;         /* E, 1..2048 */
    int32_t top_k;               /* k, 1..min(E, 32) */
    int32_t block_m;             /* rows per expert block, 1..256 */
    int32_t max_tokens;          /* largest M a call will pass; sizes the plan */
    int64_t logits_row_stride;   /* elements between rows of logits; 0 means num_experts */
    uint32_t flags;              /* ALPHAMOE_FLAG_* */
    int32_t force_specialization; /* 0; diagnostics only (alphamoe/router_diagnostics.h) */
    /* ---- appended in version 0.2; a struct_size without them (zeros) is
     * the renormalized fp32 softmax top-k of version 0.1 ---- */
    int32_t scoring;             /* alphamoe_scoring */
    int32_t logits_type;         /* alphamoe_logits_type */
    int32_t num_groups;          /* expert groups (0 or 1: none); must divide num_experts */
    int32_t topk_groups;         /* groups kept per token, 1..num_groups; 0 means all */
    float routed_scaling_factor; /* multiplies every weight; finite, > 0; 0 means 1 */
    int32_t local_expert_begin;  /* expert parallelism by range: global id of local expert 0 */
    int32_t local_expert_count;  /* local experts L: the plan's expert count; 0 means all
                                    num_experts (no expert parallelism) */
    uint32_t reserved;           /* must be 0 */
    /* ---- appended in version 0.3 ---- */
    int32_t vocab_size;          /* rows of buffers.hash_table with ALPHAMOE_FLAG_HASH_ROUTING
                                    (>= 1); 0 without it */
    int32_t num_physical_experts; /* P, 1..2048, with ALPHAMOE_FLAG_REDUNDANT_EXPERTS; 0 without it */
    int32_t replica_slots;       /* R, 1..P: replicas per logical expert at most (the row length
                                    of buffers.logical_to_physical), with the flag; 0 without it */
    uint32_t reserved2;          /* must be 0 */
} alphamoe_params;

/* A validated, immutable parameter set. Thread-safe to share. */
typedef struct alphamoe_router alphamoe_router;

/* Validates params and creates a router. Host only, no GPU needed.
 * On failure *out is left unchanged.
 *
 * Flavours (docs/contract.md gives the exact formulas):
 * - scoring SOFTMAX (default): renormalized top-k softmax; with
 *   ALPHAMOE_FLAG_NO_RENORMALIZE each weight is the full-row softmax
 *   probability (Qwen1.5/Qwen2-MoE).
 * - scoring SIGMOID: weight = sigmoid(logit), renormalized over the
 *   selected experts unless NO_RENORMALIZE; with CORRECTION_BIAS the
 *   biased scores choose experts and groups (DeepSeek-V3, Kimi-K2,
 *   GLM-4.5); sigmoid, top_k 1 and NO_RENORMALIZE is Llama-4's router.
 * - scoring SQRT_SOFTPLUS: as SIGMOID with score sqrt(softplus(logit))
 *   (DeepSeek-V4, with CORRECTION_BIAS); a weight that would exceed the
 *   largest float is the largest float.
 * - num_groups > 1: experts [g*E/G, (g+1)*E/G) form group g; only the
 *   best topk_groups groups of a token are eligible.
 * - routed_scaling_factor multiplies every weight.
 * - expert parallelism (local_expert_count > 0): the plan covers the L
 *   local experts only, in local ids; pairs of experts another rank owns
 *   appear in no group and no count; topk_ids stay global.
 * - logits_type BF16 or F16: logits are converted exactly to fp32.
 * - ALPHAMOE_FLAG_HASH_ROUTING with vocab_size: the experts come from a
 *   table, the weights from the scoring (no groups, no correction bias,
 *   no shared expert: ALPHAMOE_ERROR_HASH_ROUTING otherwise).
 * - ALPHAMOE_FLAG_REDUNDANT_EXPERTS with num_physical_experts P and
 *   replica_slots R: each chosen logical expert becomes one of its
 *   physical replicas, after the choice and the weights; topk_ids and the
 *   plan are over the P physical experts (expert parallelism too: the
 *   range and the map are over P). Combines with every other flavour.
 * Shared-expert mode needs softmax scoring and no groups
 * (ALPHAMOE_ERROR_SHARED_EXPERT otherwise).
 *
 * alphamoe_router_get_params returns the parameters normalized: the row
 * stride resolved, num_groups at least 1, topk_groups resolved,
 * routed_scaling_factor 1 for 0, local_expert_count num_experts for 0
 * (num_physical_experts with ALPHAMOE_FLAG_REDUNDANT_EXPERTS). */
ALPHAMOE_API alphamoe_status alphamoe_router_create(const alphamoe_params *params,
                                                    alphamoe_router **out);
/* NULL is accepted and ignored, and so is a router that is not live.
 *
 * A router carries a magic word that creation sets and destruction
 * changes: every entry point that takes a router answers
 * ALPHAMOE_ERROR_INVALID_HANDLE for one without it, and destroying a
 * router twice does nothing the second time. This is best effort: a
 * destroyed router is recognized only while its memory has not been
 * handed out again, and reading that memory is still a use after free. */
ALPHAMOE_API void alphamoe_router_destroy(alphamoe_router *router);
/* Copies the router's (normalized) parameters out; struct_size is honoured. */
ALPHAMOE_API alphamoe_status alphamoe_router_get_params(const alphamoe_router *router,
                                                        alphamoe_params *out);

/* ------------------------------------------------------------------ */
/* Sizing                                                              */
/* ------------------------------------------------------------------ */

typedef struct alphamoe_extent {
    int64_t elements; /* int32 or fp32 elements (workspace: bytes) */
    int64_t bytes;
} alphamoe_extent;

typedef struct alphamoe_sizes {
    size_t struct_size;                      /* sizeof(alphamoe_sizes) */
    alphamoe_extent topk_ids;                /* max_tokens * k */
    alphamoe_extent topk_weights;            /* max_tokens * k */
    alphamoe_extent sorted_token_ids;        /* the capacity */
    alphamoe_extent expert_ids;              /* capacity / block_m */
    alphamoe_extent num_tokens_post_padded;  /* 1 */
    alphamoe_extent expert_counts;           /* L (E without expert parallelism, P with redundant
                                                experts) */
    alphamoe_extent expert_offsets;          /* L + 1 */
    alphamoe_extent pair_to_sorted;          /* max_tokens * k */
    alphamoe_extent workspace;               /* bytes; zero it once after allocating */
    int64_t workspace_alignment;             /* bytes */
} alphamoe_sizes;

/* Sizes of every output and of the workspace for the router's max_tokens.
 * Capacity for P = max_tokens * k pairs over the plan's L experts (L = E
 * without expert parallelism) is
 *   blocks = min(L, P) + floor((P - min(L, P)) / block_m), capacity = blocks * block_m.
 * Host only. */
ALPHAMOE_API alphamoe_status alphamoe_router_sizes(const alphamoe_router *router,
                                                   alphamoe_sizes *out);

/* ------------------------------------------------------------------ */
/* Buffers of one call                                                 */
/* ------------------------------------------------------------------ */

/* Device pointers for alphamoe_route, host pointers for
 * alphamoe_route_host. Every buffer must be 4-byte aligned, the workspace
 * sizes.workspace_alignment-aligned. Capacities are in elements (bytes for
 * the workspace) and must be at least what alphamoe_router_sizes gives. */
typedef struct alphamoe_buffers {
    size_t struct_size;               /* sizeof(alphamoe_buffers) */
    int32_t *topk_ids;                /* required, [M, k]; may be NULL when M == 0 */
    float *topk_weights;              /* required, [M, k]; may be NULL when M == 0 */
    int32_t *sorted_token_ids;        /* required, [capacity]; may be NULL when capacity == 0 */
    int32_t *expert_ids;              /* required, [capacity / block_m]; likewise */
    int32_t *num_tokens_post_padded;  /* required, [1] */
    int32_t *expert_counts;           /* optional (NULL skips), [L] */
    int32_t *expert_offsets;          /* optional, [L + 1] */
    int32_t *pair_to_sorted;          /* optional, [M, k]; -1 for a pair another rank owns or of no
                                         expert */
    int64_t sorted_token_ids_capacity; /* elements allocated */
    int64_t expert_ids_capacity;      /* elements allocated */
    void *workspace;                  /* required for alphamoe_route; ignored by the host reference */
    size_t workspace_bytes;
    /* ---- appended in version 0.2 ---- */
    const float *correction_bias;     /* [E]; required with ALPHAMOE_FLAG_CORRECTION_BIAS when M > 0,
                                         ignored otherwise */
    const int32_t *expert_map;        /* [E]; required with ALPHAMOE_FLAG_EXPERT_MAP when M > 0,
                                         ignored otherwise. A value outside [0, L) means
                                         "not local", exactly like -1 */
    /* ---- appended in version 0.3 ---- */
    const int32_t *token_ids;         /* [M]; required with ALPHAMOE_FLAG_HASH_ROUTING when M > 0,
                                         ignored otherwise */
    const int32_t *hash_table;        /* [vocab_size, k]; likewise */
    const int32_t *logical_to_physical; /* [E, R]; required with ALPHAMOE_FLAG_REDUNDANT_EXPERTS when
                                         M > 0, ignored otherwise */
    const int32_t *replica_count;     /* [E]; likewise */
    int32_t *physical_load;           /* optional (NULL skips), [P]; with the flag, +1 at each pair's
                                         physical id; never zeroed by the router */
} alphamoe_buffers;

/* ------------------------------------------------------------------ */
/* Routing                                                             */
/* ------------------------------------------------------------------ */

/* One kernel launch on `stream` (NULL: the current context's default
 * stream), asynchronous, graph-capturable. logits: device [M, E] of the
 * router's logits_type (fp32, bf16 or fp16; aligned to its element size)
 * with the router's row stride in elements. The device is the one owning
 * the stream's context. One workspace must not be used by two calls that
 * may run at the same time. Parameters the kernels do not implement give
 * ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR before anything else is touched. */
ALPHAMOE_API alphamoe_status alphamoe_route(const alphamoe_router *router, int32_t num_tokens,
                                            const void *logits, const alphamoe_buffers *buffers,
                                            struct CUstream_st *stream);

/* The same contract executed on the CPU over host buffers: ids and plan
 * bitwise equal to alphamoe_route, weights within 4e-6 (times the routed
 * scaling factor when it exceeds 1). Runs every valid flavour. Needs no
 * GPU. */
ALPHAMOE_API alphamoe_status alphamoe_route_host(const alphamoe_router *router, int32_t num_tokens,
                                                 const void *logits,
                                                 const alphamoe_buffers *buffers);

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

/* Device ordinals here are the CUDA driver's, which are also the CUDA
 * runtime's (both honour CUDA_VISIBLE_DEVICES). */

/* Number of CUDA devices visible through the driver. */
ALPHAMOE_API alphamoe_status alphamoe_device_count(int32_t *count);

/* Name of a device and the image arch it would run (0 when none). */
ALPHAMOE_API alphamoe_status alphamoe_device_describe(int32_t device_ordinal, char *name,
                                                      size_t name_capacity,
                                                      int32_t *compute_capability,
                                                      int32_t *image_arch);

#ifdef __cplusplus
}
#endif

#endif /* ALPHAMOE_ROUTER_H */
