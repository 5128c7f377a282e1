/*
 * One router configuration ready to be timed: the router, its device
 * outputs and workspace (sized by alphamoe_router_sizes), device logits,
 * and the selection the library makes for it on the device.
 *
 * The optional outputs (expert_counts, expert_offsets, pair_to_sorted) are
 * not requested: the benchmark times what a fused-MoE layer reads.
 */
#ifndef ALPHAMOE_BENCH_ROUTE_FIXTURE_H
#define ALPHAMOE_BENCH_ROUTE_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "alphamoe/router_diagnostics.h"
#include "bench_device.h"

typedef struct fixture_spec {
    int32_t experts;
    int32_t tokens; /* also the router's max_tokens */
    int32_t top_k;
    int32_t block_m;
    bool shared;
    uint32_t extra_flags; /* ALPHAMOE_FLAG_PDL for the dependent-launch pair */
    int32_t force;        /* alphamoe_specialization; AUTO lets the library choose */
    int32_t flavour;      /* FLAVOUR_* of bench_flavours.h */
} fixture_spec;

typedef struct route_fixture {
    fixture_spec spec;
    alphamoe_router *router;
    alphamoe_params params;
    alphamoe_sizes sizes;
    alphamoe_selection selection; /* what alphamoe_router_select says for the device */
    void *logits;                 /* device, [tokens, experts] of the flavour's logits type */
    alphamoe_buffers buffers;     /* device */
    float *host_bias;             /* the flavour's correction bias, [experts], or NULL */
    int32_t *host_map;            /* the flavour's expert map, [experts], or NULL */
    device_arena *arena;          /* holds every device buffer above */
} route_fixture;

/* Takes every device buffer from d's arena; one fixture at a time. */
int fixture_create(route_fixture *f, const fixture_spec *spec, bench_device *d);
void fixture_destroy(route_fixture *f);

/* Uniform random logits in [-1, 1) from the seed (bf16 ones rounded to
 * nearest even), uploaded. */
int fixture_fill_logits(route_fixture *f, uint64_t seed);

/* One alphamoe_route call on the stream; ctx is the route_fixture. Fits
 * issue_fn. */
int issue_route(void *ctx, cudaStream_t stream);

int64_t fixture_logits_count(const route_fixture *f);
int64_t fixture_logits_bytes(const route_fixture *f);

#endif
