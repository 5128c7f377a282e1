/*
 * One router configuration ready to be timed: a route fixture
 * (tools/common/route_fixture.h) of the shape and flavour, its buffers in
 * the device's arena, and the selection the library makes for it on the
 * device. The optional outputs (expert_counts, expert_offsets,
 * pair_to_sorted) are not requested: the benchmark times what a fused-MoE
 * layer reads.
 */
#ifndef ALPHAMOE_BENCH_FIXTURE_H
#define ALPHAMOE_BENCH_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "alphamoe/router_diagnostics.h"
#include "bench_device.h"
#include "route_fixture.h"

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

/* The router parameters of a spec. */
alphamoe_params bench_fixture_params(const fixture_spec *spec);

/* Takes every device buffer from d's arena; one fixture at a time. The
 * flavour's correction bias is small and random, its expert map gives
 * every (E / L)-th expert a local id. */
int bench_fixture_create(route_fixture *f, const fixture_spec *spec, bench_device *d, alphamoe_selection *sel);

/* Uniform random logits in [-1, 1) from the seed (bf16 and fp16 ones
 * rounded to nearest even), uploaded. */
int bench_fixture_fill_logits(route_fixture *f, uint64_t seed);

/* Checks the work against the host reference (fixture_check); prints the
 * first difference and returns -1 when they differ. */
int verify_route(const route_fixture *f, bench_device *d, issue_fn issue, void *ctx, const char *label);

#endif
