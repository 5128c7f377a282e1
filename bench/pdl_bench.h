/*
 * Programmatic dependent launch: a producer kernel writes the logits, the
 * router consumes them. The pair is timed end to end (first kernel start to
 * last kernel end, CUPTI, cold L2) with the router created without and with
 * ALPHAMOE_FLAG_PDL, and per pair in a graph of GRAPH_CALLS back-to-back
 * pairs; the gain is the difference. The producer computes, triggers
 * griddepcontrol.launch_dependents, then stores the logits (see
 * floor_kernels.cu): the router may be launched during the stores and waits
 * in griddepcontrol.wait until they are complete.
 */
#ifndef ALPHAMOE_BENCH_PDL_BENCH_H
#define ALPHAMOE_BENCH_PDL_BENCH_H

#include "bench_device.h"
#include "bench_shapes.h"
#include "shape_bench.h"
#include "timing_stats.h"

/* A graph figure that could not be taken (the pair could not be captured
 * or instantiated). */
#define GRAPH_NOT_MEASURED (-1.0)

typedef struct pdl_result {
    const bench_shape *shape;
    round_stats producer;  /* the producer alone, kernel time */
    round_stats serial;    /* the pair, router without PDL: first start to last end */
    round_stats dependent; /* the pair, router with ALPHAMOE_FLAG_PDL */
    double graph_serial_us;    /* per pair, graph replay; GRAPH_NOT_MEASURED */
    double graph_dependent_us;
} pdl_result;

/* Whether the shape is one of those the dependent-launch pair is measured on. */
bool pdl_measures(const bench_shape *s);

int bench_pdl_pair(bench_device *d, const bench_shape *s, const shape_run_plan *plan, pdl_result *out);

#endif
