/*
 * alphamoe-bench's text output: the run's set-up, the floors, one row per
 * shape, the dependent-launch pairs.
 */
#ifndef ALPHAMOE_BENCH_REPORT_H
#define ALPHAMOE_BENCH_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "bench_run.h"
#include "bench_shapes.h"

/* One floor of the run as the reports name it, with its figures (or a
 * single value where only that was measured). */
typedef struct floor_line {
    char what[96];
    const round_stats *stats; /* NULL: value_us alone */
    double value_us;
} floor_line;
#define FLOOR_LINES (6 + 2 * READ_FLOOR_COUNT)
int floor_lines(const floor_figures *f, floor_line out[FLOOR_LINES]);

void print_shape_list(const bench_shape *shapes, int32_t n);
void print_run_header(const bench_run *run);
void print_floors(const bench_run *run);
void print_shape_table(const bench_run *run);
void print_pdl_table(const bench_run *run);

/* The library's commit, from the environment (ALPHAMOE_COMMIT), or NULL. */
const char *library_commit(void);

/* What the reports' headers name: "AlphaMoE router 0.2.0 (commit 1a2b3c4)",
 * the commit where known, and the CUDA driver's and runtime's versions,
 * "13.0". */
typedef struct run_names {
    char library[128];
    char driver[16];
    char runtime[16];
} run_names;
void name_run(const bench_run *run, run_names *out);

#endif
