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
    int32_t cooperative;              /* nonzero: every CTA resident at once (small: one cluster
                                         when <= 8 CTAs of <= 4095 tokens, or a CTA a token) */
    int32_t image_arch;               /* the embedded image used: 90 for sm_90a, 100, 103 */
    int32_t tokens_per_cta;
} alphamoe_selection;

/* Attributes of CUDA device `device_ordinal` as the selection reads them. */
ALPHAMOE_API alphamoe_status alphamoe_device_attributes_query(int32_t device_ordinal,
                                                              alphamoe_device_attributes *out);

/* "auto", "tiny", "small" or "large"; NULL for other values. */
ALPHAMOE_API const char *alphamoe_specialization_name(alphamoe_specialization specialization);

/* Which specialization, grid, block and image a call with num_tokens would
 * use on a device with these attributes. A pure function.
 * ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR when the router's parameters are a
 * flavour the kernels do not implement: the way to ask before routing. */
ALPHAMOE_API alphamoe_status alphamoe_router_select(const alphamoe_router *router,
                                                    int32_t num_tokens,
                                                    const alphamoe_device_attributes *device,
                                                    alphamoe_selection *out);

/* ------------------------------------------------------------------ */
/* Information                                                         */
/* ------------------------------------------------------------------ */

#define ALPHAMOE_KERNEL_COUNT 12

/* Name of kernel `index` (0..ALPHAMOE_KERNEL_COUNT-1), e.g. "tiny_routed" or
 * "large_shared_flavours" (the kernels of the routing flavours);
 * NULL past the end. */
ALPHAMOE_API const char *alphamoe_kernel_name(int32_t index);

/* The architectures (90, 100, 103) of the images embedded for kernel
 * `index`, read from the embedded fatbin itself. Writes at most `capacity`
 * values to archs (4-byte aligned) and the total into *count. */
ALPHAMOE_API alphamoe_status alphamoe_kernel_images(int32_t index, int32_t *archs,
                                                    int32_t capacity, int32_t *count);

#ifdef __cplusplus
}
#endif

#endif /* ALPHAMOE_ROUTER_DIAGNOSTICS_H */
