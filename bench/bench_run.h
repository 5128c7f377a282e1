/*
 * Everything one alphamoe-bench run measured, as the report and the
 * exports read it.
 */
#ifndef ALPHAMOE_BENCH_RUN_H
#define ALPHAMOE_BENCH_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "bench_device.h"
#include "entries.h"
#include "floors.h"
#include "pdl_bench.h"
#include "shape_bench.h"
#include "sweep.h"

typedef struct bench_run {
    const bench_device *device;
    shape_run_plan plan;
    bool have_floors; /* not in a sweep */
    floor_figures floors;
    shape_result *shapes;
    int32_t shape_count;
    pdl_result *pdl;
    int32_t pdl_count;
    sweep_results sweep;
    entry_results entries;
} bench_run;

#endif
