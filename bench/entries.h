/*
 * --entries: whether every entry point earns its place. For each shape of
 * the entry grid (the selected benchmark shapes, then a grid of row widths,
 * batch sizes, routings and expert modes), the cold-L2 kernel time of the
 * library's own plan and of every other plan that computes the same
 * results (alphamoe_router_candidates: another variant, the flavoured
 * kernel for a plain call),
 * each launched through alphamoe_route_with_plan and checked against the
 * host reference first. An entry point earns its place where the library
 * chooses it and the best other plan is slower by at least
 * ENTRY_WIN_MARGIN_US.
 */
#ifndef ALPHAMOE_BENCH_ENTRIES_H
#define ALPHAMOE_BENCH_ENTRIES_H

#include <stdbool.h>
#include <stdint.h>

#include "alphamoe/router_diagnostics.h"
#include "bench_device.h"
#include "bench_shapes.h"
#include "shape_bench.h"
#include "timing_stats.h"

#define ENTRY_WIN_MARGIN_US 0.03

typedef struct entry_time {
    char shape[64];
    int32_t entry;   /* alphamoe_entry_point_name(entry) */
    bool chosen;     /* the library's own plan for the shape */
    round_stats kernel;
} entry_time;

typedef struct entry_results {
    entry_time *points; /* per shape: the chosen plan first, then the others */
    int32_t count;
    int32_t capacity;
} entry_results;

int run_entries(bench_device *d, const bench_shape *shapes, const bool *selected, int32_t n,
                const shape_run_plan *plan, entry_results *out);

/* Per entry point: its best margin over the shapes where it is chosen
 * (the best other plan's time less its own); *shape names that shape, NULL
 * where it is chosen nowhere. */
double entry_best_margin(const entry_results *r, int32_t entry, const char **shape);

/* The per-entry-point table on stdout. */
void print_entries(const entry_results *r);

void entries_free(entry_results *r);

#endif
