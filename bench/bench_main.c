/*
 * alphamoe-bench: the AlphaMoE router's kernel time from the CUPTI activity
 * API, with L2 evicted before every sample, against floors measured in the
 * same run, and per call inside a CUDA graph; the gain of programmatic
 * dependent launch; with --sweep, every specialization over a grid of
 * batch sizes; with --entries, every entry point that can run a call.
 *
 * Routing goes through the public C ABI only; memory, streams and graphs
 * through the CUDA runtime; the floor and producer kernels come from
 * floor_kernels.cu.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_check.h"
#include "bench_device.h"
#include "bench_export.h"
#include "bench_markdown.h"
#include "bench_options.h"
#include "bench_report.h"
#include "bench_run.h"
#include "bench_shapes.h"
#include "cupti_trace.h"
#include "floors.h"
#include "pdl_bench.h"
#include "shape_bench.h"
#include "sweep.h"

const char *tool_prog = BENCH_PROG;

static int run_shapes(bench_device *d, const bench_shape *shapes, const bool *selected, bench_run *run) {
    TRY(measure_floors(d, &run->plan.sampling, run->plan.graph_replays, &run->floors));
    run->have_floors = true;
    print_floors(run);
    run->shapes = calloc(SHAPE_COUNT, sizeof(*run->shapes));
    run->pdl = calloc(SHAPE_COUNT, sizeof(*run->pdl));
    if (run->shapes == NULL || run->pdl == NULL) {
        fprintf(stderr, BENCH_PROG ": out of host memory\n");
        return -1;
    }
    for (int32_t i = 0; i < SHAPE_COUNT; ++i) {
        if (!selected[i]) continue;
        TRY(bench_one_shape(d, &shapes[i], &run->floors, &run->plan, &run->shapes[run->shape_count]));
        run->shape_count += 1;
    }
    judge_shared_mode(run->shapes, run->shape_count);
    print_shape_table(run);
    for (int32_t i = 0; i < SHAPE_COUNT; ++i) {
        if (!selected[i] || !pdl_measures(&shapes[i])) continue;
        TRY(bench_pdl_pair(d, &shapes[i], &run->plan, &run->pdl[run->pdl_count]));
        run->pdl_count += 1;
    }
    print_pdl_table(run);
    return 0;
}

static int run_sweep_mode(bench_device *d, const bench_shape *shapes, const bool *selected, bool quick,
                          bench_run *run) {
    const int32_t *tokens = quick ? kQuickSweepTokens : kSweepTokens;
    const int32_t count = quick ? kQuickSweepTokenCount : kSweepTokenCount;
    return run_sweep(d, shapes, selected, SHAPE_COUNT, tokens, count, &run->plan, &run->sweep);
}

static int write_exports(const bench_run *run, const bench_options *o) {
    int rc = 0;
    if (o->csv_path && write_csv(run, o->csv_path) != 0) rc = -1;
    if (o->json_path && write_json(run, o->json_path) != 0) rc = -1;
    if (o->markdown_path && write_markdown(run, o->markdown_path) != 0) rc = -1;
    return rc;
}

static int measure(const bench_options *o, const bench_shape *shapes, const bool *selected) {
    bench_device d;
    bench_run run;
    memset(&run, 0, sizeof(run));
    run.device = &d;
    run.plan = resolve_plan(o);
    int rc = device_open(&d, o->device);
    d.evict_code = o->cold_code;
    if (rc == 0) arena_set_origin(&d.arena, (size_t)o->arena_offset_kib << 10);
    if (rc == 0) {
        print_run_header(&run);
        if (o->sweep)
            rc = run_sweep_mode(&d, shapes, selected, o->quick, &run);
        else if (o->entries)
            rc = run_entries(&d, shapes, selected, SHAPE_COUNT, &run.plan, &run.entries);
        else
            rc = run_shapes(&d, shapes, selected, &run);
        if (o->entries) print_entries(&run.entries);
    }
    /* What was measured before a failure is still written out. */
    if (write_exports(&run, o) != 0) rc = -1;
    free(run.shapes);
    free(run.pdl);
    sweep_free(&run.sweep);
    entries_free(&run.entries);
    device_close(&d);
    return rc;
}

int main(int argc, char **argv) {
    bench_options o;
    const int parsed = parse_bench_args(argc, argv, &o);
    if (parsed == PARSE_HELP) {
        print_bench_usage(stdout);
        return 0;
    }
    if (parsed != 0) return parsed;

    bench_shape shapes[SHAPE_COUNT];
    shape_table(shapes);
    if (o.list) {
        print_shape_list(shapes, SHAPE_COUNT);
        return 0;
    }
    bool selected[SHAPE_COUNT];
    if (select_shapes(o.shapes ? o.shapes : "all", shapes, SHAPE_COUNT, selected) != 0) return EXIT_USAGE;

    char why[512] = "";
    const int probe = device_probe(o.device, why, sizeof(why));
    if (probe == EXIT_SKIPPED) {
        printf(BENCH_PROG ": %s: nothing to measure\n", why);
        return EXIT_SKIPPED;
    }
    if (probe != 0) return EXIT_FAILURE;
    if (trace_init() != 0) return EXIT_FAILURE;
    const int rc = measure(&o, shapes, selected);
    trace_shutdown();
    if (rc != 0) fprintf(stderr, BENCH_PROG ": FAILED\n");
    return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
