/*
 * AlphaMoE router diagnostics: what the library decides and what it holds,
 * for tests, benchmarks and bug reports. Nothing here is needed to route.
 *
 * Opt-in, as zstd's static-linking-only section is: these declarations
 * follow the library's internals and may change between minor versions.
 * The ABI rules of router.h still hold (struct_size, appended fields,
 * symbols never removed within one SONAME).
 */
#ifndef ALPHAMOE_ROUTER_DIAGNOSTICS_H
#define ALPHAMOE_ROUTER_DIAGNOSTICS_H

#include "alphamoe/router.h"

#ifdef __cplusplus
extern "C" {
#endif

/* alphamoe_params.force_specialization: which specialization routes every
 * call of the router, for tests that compare them. */
typedef enum alphamoe_specialization {
    ALPHAMOE_SPECIALIZATION_AUTO = 0, /* the library chooses (the only value for production) */
    ALPHAMOE_SPECIALIZATION_TINY = 1, /* one CTA, no grid barrier */
    ALPHAMOE_SPECIALIZATION_SMALL = 2, /* co-resident grid, one barrier (a cluster's up to 8 CTAs) */
    ALPHAMOE_SPECIALIZATION_LARGE = 3  /* persistent grid sized to the device */
} alphamoe_specialization;

/* ------------------------------------------------------------------ */
/* The launch plan                                                     */
/* ------------------------------------------------------------------ */

typedef struct alphamoe_device_attributes {
    size_t struct_size;               /* sizeof(alphamoe_device_attributes) */
    int32_t compute_capability;       /* major * 10 + minor, e.g. 90 */
    int32_t multiprocessor_count;
    int32_t cooperative_ctas_per_sm;  /* resident router CTAs per multiprocessor (occupancy), >= 1 */
    int32_t cooperative_launch;       /* nonzero when the device supports cooperative launch */
    /* ---- appended in version 0.3 ---- */
    int32_t max_cluster_ctas;         /* the most router CTAs one thread-block cluster holds: 16
                                         where the device schedules clusters beyond the portable
                                         size, 8, or 1 (none); 0 reads as 8, the portable size */
} alphamoe_device_attributes;

/* How a call runs: the plan the library computes once per call and
 * carries out with one launch. */
typedef struct alphamoe_selection {
    size_t struct_size;               /* sizeof(alphamoe_selection) */
    alphamoe_specialization specialization;
    int32_t grid_ctas;
    int32_t block_threads;
    int32_t cooperative;              /* nonzero: every CTA resident at once (a cluster or a
                                         cooperative launch) */
    int32_t image_arch;               /* the embedded image used: 90 for sm_90a, 100, 103 */
    int32_t tokens_per_cta;
    /* ---- appended in version 0.3 ---- */
    int32_t cluster_ctas;             /* > 0: the grid launches as one thread-block cluster of
                                         this many CTAs; 0: it does not */
    int32_t kernel_index;             /* the kernel: alphamoe_kernel_name(kernel_index) */
    int32_t entry_point_index;        /* the function launched: alphamoe_entry_point_name() */
} alphamoe_selection;

/* Attributes of CUDA device `device_ordinal` as its primary context sees
 * them. A call's plan reads those of the call's context, which has fewer
 * multiprocessors where it holds part of the device (a green context). */
ALPHAMOE_API alphamoe_status alphamoe_device_attributes_query(int32_t device_ordinal,
                                                              alphamoe_device_attributes *out);

/* "auto", "tiny", "small" or "large"; NULL for other values. */
ALPHAMOE_API const char *alphamoe_specialization_name(alphamoe_specialization specialization);

/* The plan of a call with num_tokens on a device (a context) with these
 * attributes: exactly what alphamoe_route launches there. A pure function.
 * ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR when the router's parameters are a
 * flavour the kernels do not implement: the way to ask before routing. */
ALPHAMOE_API alphamoe_status alphamoe_router_select(const alphamoe_router *router,
                                                    int32_t num_tokens,
                                                    const alphamoe_device_attributes *device,
                                                    alphamoe_selection *out);

/* Every plan that computes the same results as alphamoe_router_select's on
 * the same grid, its own first, then the other entry points that can run
 * the call (another variant, the flavoured kernel for a plain call): for
 * benchmarks that time entry points against each other and
 * tests that compare them. Writes at most `capacity` plans (each
 * struct_size set by the caller, the newest version) and their total into
 * *count. */
ALPHAMOE_API alphamoe_status alphamoe_router_candidates(const alphamoe_router *router,
                                                        int32_t num_tokens,
                                                        const alphamoe_device_attributes *device,
                                                        alphamoe_selection *plans, int32_t capacity,
                                                        int32_t *count);

/* alphamoe_route with one of the plans alphamoe_router_candidates gives
 * for the stream's context (its attributes as the library reads them);
 * ALPHAMOE_ERROR_INVALID_ARGUMENT for any other plan. */
ALPHAMOE_API alphamoe_status alphamoe_route_with_plan(const alphamoe_router *router,
                                                      int32_t num_tokens, const void *logits,
                                                      const alphamoe_buffers *buffers,
                                                      const alphamoe_selection *plan,
                                                      struct CUstream_st *stream);

/* ------------------------------------------------------------------ */
/* Kernels and entry points                                            */
/* ------------------------------------------------------------------ */

/* How many kernels (one fatbin each) and entry points the library holds. */
ALPHAMOE_API int32_t alphamoe_kernel_count(void);
ALPHAMOE_API int32_t alphamoe_entry_point_count(void);

/* Name of kernel `index` (0..alphamoe_kernel_count()-1), e.g.
 * "tiny_routed" or "large_shared_flavours" (the kernels of the routing
 * flavours); NULL past the end. */
ALPHAMOE_API const char *alphamoe_kernel_name(int32_t index);

/* Name of entry point `index` (0..alphamoe_entry_point_count()-1), the
 * function in its kernel's images, e.g. "alphamoe_large_routed_staged_w16";
 * NULL past the end. */
ALPHAMOE_API const char *alphamoe_entry_point_name(int32_t index);

/* The architectures (90, 100, 103) of the images embedded for kernel
 * `index`, read from the embedded fatbin itself. Writes at most `capacity`
 * values to archs (4-byte aligned) and the total into *count. */
ALPHAMOE_API alphamoe_status alphamoe_kernel_images(int32_t index, int32_t *archs,
                                                    int32_t capacity, int32_t *count);

#ifdef __cplusplus
}
#endif

#endif /* ALPHAMOE_ROUTER_DIAGNOSTICS_H */
