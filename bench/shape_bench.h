/*
 * One shape of the table: its result checked against the host reference,
 * its cold-L2 CUPTI kernel time (with --with-cold-code also with the
 * instruction caches evicted), its graph-replay per-call time, and the
 * verdicts against its floor and its targets.
 */
#ifndef ALPHAMOE_BENCH_SHAPE_BENCH_H
#define ALPHAMOE_BENCH_SHAPE_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "alphamoe/router_diagnostics.h"
#include "bench_device.h"
#include "bench_shapes.h"
#include "cold_sampler.h"
#include "floors.h"
#include "timing_stats.h"

/* Graph replay may add at most this much to the kernel time per call. */
#define GRAPH_OVERHEAD_LIMIT_US 1.0
/* Shared-expert mode may cost at most this much more than routed-only. */
#define SHARED_OVERHEAD_LIMIT 0.10

typedef enum check_state { CHECK_NONE = 0, CHECK_PASS, CHECK_MISS } check_state;

typedef struct shape_result {
    const bench_shape *shape;
    alphamoe_selection selection;
    round_stats kernel;
    round_stats cold_code;   /* with the instruction caches evicted too, when the plan asks */
    bool have_cold_code;
    double graph_per_call_us;
    /* the bounding floor: the largest of those that apply */
    const char *floor_name; /* "row", "rows" (FLOOR_FEW_ROWS), "barrier" or "bandwidth" */
    double floor_us;
    double bandwidth_floor_us;
    double ratio;            /* kernel median / floor_us */
    double target_us;        /* the target resolved to microseconds; 0: none */
    check_state time_check;  /* kernel median against target_us */
    check_state graph_check; /* graph per call within GRAPH_OVERHEAD_LIMIT_US of the kernel */
    check_state shared_check; /* within SHARED_OVERHEAD_LIMIT of the routed twin, when both ran */
    double routed_us;        /* the routed twin's median, for shared shapes */
} shape_result;

typedef struct shape_run_plan {
    sampling_plan sampling;
    int32_t graph_replays;
    uint64_t seed;
    bool with_cold_code; /* each shape's kernel time also with the code evicted */
} shape_run_plan;

int bench_one_shape(bench_device *d, const bench_shape *s, const floor_figures *floors, const shape_run_plan *plan,
                    shape_result *out);

/* Pairs every shared-expert result with its routed twin among results[0..n)
 * and sets shared_check. */
void judge_shared_mode(shape_result *results, int32_t n);

/* The shape's target as format_target writes it, a bandwidth ratio with
 * its bound in us: "<=1.5x bw=13.7". */
void format_shape_target(const shape_result *r, char *buf, size_t size);

/* "auto", "tiny", "small", "large"; "?" for another value. */
const char *spec_name(int32_t specialization);

/* "pass", "miss(time)", "miss(time,graph)", ...; "-" when nothing applies. */
void format_verdict(const shape_result *r, char *buf, size_t size);

#endif
