/*
 * One router configuration on the device, as alphamoe-route and
 * alphamoe-bench use it: the router and its sizes, the host inputs its
 * flavour reads (correction bias, expert map, hash routing's token ids and
 * table, redundant experts' replica tables), and, taken from a device arena in a fixed order, the logits, the
 * outputs, the workspace (zeroed once, as the contract asks), and those
 * inputs.
 */
#ifndef ALPHAMOE_TOOLS_ROUTE_FIXTURE_H
#define ALPHAMOE_TOOLS_ROUTE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "alphamoe/router_diagnostics.h"
#include "device_arena.h"
#include "outputs.h"

/* Issues one piece of work on the stream; returns 0 or -1. */
typedef int (*issue_fn)(void *ctx, cudaStream_t stream);

typedef struct route_fixture {
    alphamoe_router *router;
    alphamoe_params params;   /* as the router normalized them */
    alphamoe_sizes sizes;
    int32_t tokens;           /* of every call */
    float *host_bias;         /* [E] where the flavour reads a correction bias, else NULL */
    int32_t *host_map;        /* [E] where it reads an expert map, else NULL */
    int32_t *host_token_ids;  /* [tokens] with hash routing, else NULL */
    int32_t *host_hash_table; /* [vocab_size, k] with hash routing, else NULL */
    int32_t *host_replicas;   /* [E, R] and [E] (count) with redundant experts, else NULL */
    unsigned optional;        /* OUTPUT_* the device outputs include */
    void *logits;             /* device, [tokens, E] of the router's logits type */
    alphamoe_buffers buffers; /* device */
    device_arena *arena;      /* holds every device buffer above */
} route_fixture;

/* The router of p (max_tokens included) for calls of `tokens` tokens,
 * its sizes, and zeroed host inputs where its flavour reads them, for the
 * caller to fill (fixture_fill_inputs). Returns alphamoe_router_create's status, or
 * ALPHAMOE_ERROR_OUT_OF_MEMORY; the caller reports it. */
alphamoe_status fixture_router(route_fixture *f, const alphamoe_params *p, int32_t tokens);

/* Fills the host inputs the flavour reads from the generator seed: a
 * random bias, hash routing's token ids and table (each entry an expert),
 * and replica tables that give logical expert e physical expert e, and the
 * physical experts past E to the first logical ones as second replicas;
 * the expert map is the caller's. */
void fixture_fill_inputs(route_fixture *f, uint64_t seed);

/* Host buffers over the output set s and the fixture's host inputs, for
 * alphamoe_route_host. */
alphamoe_buffers fixture_host_buffers(const route_fixture *f, const output_set *s);

/* The device bytes fixture_alloc takes from an arena of its own. */
size_t fixture_device_bytes(const route_fixture *f, unsigned optional);

/* Takes every device buffer from the arena (one fixture at a time): the
 * logits first, so every build of the benchmark reads a shape's logits
 * from the same addresses; the required outputs, the optional ones named,
 * the workspace (zeroed), the flavour's inputs (uploaded from the host
 * arrays as they stand). */
int fixture_alloc(route_fixture *f, device_arena *a, unsigned optional);

/* Uploads the logits, already in the router's type, and waits for them. */
int fixture_upload_logits(route_fixture *f, const void *typed);

/* Host outputs shaped like the fixture's device outputs. */
int fixture_host_outputs(const route_fixture *f, output_set *s);

/* One alphamoe_route call on the stream; ctx is the route_fixture. Fits
 * issue_fn. */
int issue_route(void *ctx, cudaStream_t stream);

/* Gives the arena back and destroys the router. */
void fixture_destroy(route_fixture *f);

int64_t fixture_logits_count(const route_fixture *f);
int64_t fixture_logits_bytes(const route_fixture *f);

#endif
