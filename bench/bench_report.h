/*
 * alphamoe-bench's text output: the run's set-up, the floors, one row per
 * shape, the dependent-launch pairs.
 */
#ifndef ALPHAMOE_BENCH_REPORT_H
#define ALPHAMOE_BENCH_REPORT_H

#include <stdint.h>

#include "bench_run.h"
#include "bench_shapes.h"

void print_shape_list(const bench_shape *shapes, int32_t n);
void print_run_header(const bench_run *run);
void print_floors(const bench_run *run);
void print_shape_table(const bench_run *run);
void print_pdl_table(const bench_run *run);

#endif
