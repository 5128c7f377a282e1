/*
 * --sweep: for each shape family (E, k, block_m, shared, flavour) of the selected
 * shapes and each token count of the grid, the cold-L2 CUPTI kernel time of
 * every specialization forced through alphamoe_params.force_specialization
 * and of the library's own choice. The best per token count is what the
 * tuning table in capi/plan.cpp is set from.
 */
#ifndef ALPHAMOE_BENCH_SWEEP_H
#define ALPHAMOE_BENCH_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "alphamoe/router_diagnostics.h"
#include "bench_device.h"
#include "bench_shapes.h"
#include "shape_bench.h"
#include "timing_stats.h"

typedef struct sweep_point {
    char family[48]; /* e512-k10-bm8, e512-k10-bm8-shared, e512-k10-bm8-bf16, ... */
    int32_t experts;
    int32_t top_k;
    int32_t block_m;
    bool shared;
    int32_t flavour; /* FLAVOUR_* of bench_flavours.h */
    int32_t tokens;
    int32_t forced;               /* alphamoe_specialization; AUTO: the library's choice */
    alphamoe_selection selection; /* what ran: specialization, grid */
    round_stats kernel;
} sweep_point;

/* A family's points per token count, in this order: tiny, small and large
 * forced (the candidates for the best), then the library's choice. */
#define SWEEP_ROW_POINTS 4
#define SWEEP_FORCED 3

typedef struct sweep_results {
    sweep_point *points;
    int32_t count;
    int32_t capacity;
} sweep_results;

/* Prints each family's table as it is measured, then its best
 * specialization per token count. */
int run_sweep(bench_device *d, const bench_shape *shapes, const bool *selected, int32_t n, const int32_t *tokens,
              int32_t token_count, const shape_run_plan *plan, sweep_results *out);

void sweep_free(sweep_results *r);

/* The fastest forced specialization of one row of SWEEP_ROW_POINTS points. */
const sweep_point *sweep_best_of_row(const sweep_point *row);

#endif
