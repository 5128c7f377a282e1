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
 * built against an older header keeps working.
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
    ALPHAMOE_ERROR_NUM_EXPERTS = 3,      /* num_experts outside [1, 512] */
    ALPHAMOE_ERROR_TOP_K = 4,            /* top_k outside [1, min(num_experts, 16)] */
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
    ALPHAMOE_ERROR_INVALID_ARGUMENT = 21 /* another argument out of range (an index, a capacity) */
} alphamoe_status;

/* A fixed English message naming the status, e.g. "ALPHAMOE_ERROR_TOP_K:
 * top_k must be in [1, min(num_experts, 16)]". Never NULL. */
ALPHAMOE_API const char *alphamoe_status_string(alphamoe_status status);

/* The library's version as ALPHAMOE_VERSION_NUMBER encodes it; compare with
 * the macro to detect a header/library mismatch. */
ALPHAMOE_API uint32_t alphamoe_version_number(void);
ALPHAMOE_API const char *alphamoe_version_string(void);

/* ------------------------------------------------------------------ */
/* Parameters                                                          */
/* ------------------------------------------------------------------ */

#define ALPHAMOE_MAX_EXPERTS 512
#define ALPHAMOE_MAX_TOP_K 16
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
#define ALPHAMOE_FLAG_ALL (ALPHAMOE_FLAG_SHARED_EXPERT | ALPHAMOE_FLAG_TAIL_FILL | ALPHAMOE_FLAG_PDL)

typedef enum alphamoe_specialization {
    ALPHAMOE_SPECIALIZATION_AUTO = 0, /* the library chooses (the only value for production) */
    ALPHAMOE_SPECIALIZATION_TINY = 1, /* one CTA, no grid barrier */
    ALPHAMOE_SPECIALIZATION_SMALL = 2, /* cooperative grid, one grid barrier */
    ALPHAMOE_SPECIALIZATION_LARGE = 3  /* persistent grid sized to the device */
} alphamoe_specialization;

typedef struct alphamoe_params {
    size_t struct_size;          /* sizeof(alphamoe_params) */
    int32_t num_experts;         /* E, 1..512 */
    int32_t top_k;               /* k, 1..min(E, 16) */
    int32_t block_m;             /* rows per expert block, 1..256 */
    int32_t max_tokens;          /* largest M a call will pass; sizes the plan */
    int64_t logits_row_stride;   /* elements between rows of logits; 0 means num_experts */
    uint32_t flags;              /* ALPHAMOE_FLAG_* */
    int32_t force_specialization; /* alphamoe_specialization; tests only, AUTO otherwise */
} alphamoe_params;

/* A validated, immutable parameter set. Thread-safe to share. */
typedef struct alphamoe_router alphamoe_router;

/* Validates params and creates a router. Host only, no GPU needed.
 * On failure *out is left unchanged. */
ALPHAMOE_API alphamoe_status alphamoe_router_create(const alphamoe_params *params,
                                                    alphamoe_router **out);
/* NULL is accepted and ignored. */
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
    alphamoe_extent expert_counts;           /* E */
    alphamoe_extent expert_offsets;          /* E + 1 */
    alphamoe_extent pair_to_sorted;          /* max_tokens * k */
    alphamoe_extent workspace;               /* bytes; zero it once after allocating */
    int64_t workspace_alignment;             /* bytes */
} alphamoe_sizes;

/* Sizes of every output and of the workspace for the router's max_tokens.
 * Capacity for P = max_tokens * k pairs is
 *   blocks = min(E, P) + floor((P - min(E, P)) / block_m), capacity = blocks * block_m.
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
    int32_t *expert_counts;           /* optional (NULL skips), [E] */
    int32_t *expert_offsets;          /* optional, [E + 1] */
    int32_t *pair_to_sorted;          /* optional, [M, k] */
    int64_t sorted_token_ids_capacity; /* elements allocated */
    int64_t expert_ids_capacity;      /* elements allocated */
    void *workspace;                  /* required for alphamoe_route; ignored by the host reference */
    size_t workspace_bytes;
} alphamoe_buffers;

/* ------------------------------------------------------------------ */
/* Routing                                                             */
/* ------------------------------------------------------------------ */

/* One kernel launch on `stream` (NULL: the current context's default
 * stream), asynchronous, graph-capturable. logits: device FP32 [M, E] with
 * the router's row stride. The device is the one owning the stream's
 * context. One workspace must not be used by two calls that may run at
 * the same time. */
ALPHAMOE_API alphamoe_status alphamoe_route(const alphamoe_router *router, int32_t num_tokens,
                                            const float *logits, const alphamoe_buffers *buffers,
                                            struct CUstream_st *stream);

/* The same contract executed on the CPU over host buffers: ids and plan
 * bitwise equal to alphamoe_route, weights within 4e-6. Needs no GPU. */
ALPHAMOE_API alphamoe_status alphamoe_route_host(const alphamoe_router *router, int32_t num_tokens,
                                                 const float *logits,
                                                 const alphamoe_buffers *buffers);

/* ------------------------------------------------------------------ */
/* Variant selection                                                   */
/* ------------------------------------------------------------------ */

typedef struct alphamoe_device_attributes {
    size_t struct_size;               /* sizeof(alphamoe_device_attributes) */
    int32_t compute_capability;       /* major * 10 + minor, e.g. 90 */
    int32_t multiprocessor_count;
    int32_t cooperative_ctas_per_sm;  /* resident router CTAs per multiprocessor (occupancy), >= 1 */
    int32_t cooperative_launch;       /* nonzero when the device supports cooperative launch */
} alphamoe_device_attributes;

typedef struct alphamoe_selection {
    size_t struct_size;               /* sizeof(alphamoe_selection) */
    alphamoe_specialization specialization;
    int32_t grid_ctas;
    int32_t block_threads;
    int32_t cooperative;              /* nonzero: launched cooperatively */
    int32_t image_arch;               /* the embedded image used: 90 for sm_90a, 100, 103 */
    int32_t tokens_per_cta;
} alphamoe_selection;

/* Device ordinals here are the CUDA driver's, which are also the CUDA
 * runtime's (both honour CUDA_VISIBLE_DEVICES). */

/* Attributes of CUDA device `device_ordinal` as the selection reads them. */
ALPHAMOE_API alphamoe_status alphamoe_device_attributes_query(int32_t device_ordinal,
                                                              alphamoe_device_attributes *out);

/* "auto", "tiny", "small" or "large"; NULL for other values. */
ALPHAMOE_API const char *alphamoe_specialization_name(alphamoe_specialization specialization);

/* Which specialization, grid, block and image a call with num_tokens would
 * use on a device with these attributes. A pure function. */
ALPHAMOE_API alphamoe_status alphamoe_router_select(const alphamoe_router *router,
                                                    int32_t num_tokens,
                                                    const alphamoe_device_attributes *device,
                                                    alphamoe_selection *out);

/* ------------------------------------------------------------------ */
/* Information                                                         */
/* ------------------------------------------------------------------ */

#define ALPHAMOE_KERNEL_COUNT 6

/* Name of kernel `index` (0..ALPHAMOE_KERNEL_COUNT-1), e.g. "tiny_routed";
 * NULL past the end. */
ALPHAMOE_API const char *alphamoe_kernel_name(int32_t index);

/* The architectures (90, 100, 103) of the images embedded for kernel
 * `index`, read from the embedded fatbin itself. Writes at most `capacity`
 * values to archs and the total into *count. */
ALPHAMOE_API alphamoe_status alphamoe_kernel_images(int32_t index, int32_t *archs,
                                                    int32_t capacity, int32_t *count);

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
