#include "bench_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alphamoe/router_diagnostics.h"
#include "bench_check.h"
#include "code_evict.h"
#include "cupti_trace.h"
#include "floor_kernels.h"
#include "graph_replay.h"

const char *library_commit(void) {
    const char *commit = getenv("ALPHAMOE_COMMIT");
    return commit && commit[0] ? commit : NULL;
}

static void format_cuda_version(int32_t v, char *buf, size_t size) {
    snprintf(buf, size, "%d.%d", (int)(v / 1000), (int)(v % 1000 / 10));
}

void name_run(const bench_run *run, run_names *out) {
    const char *commit = library_commit();
    snprintf(out->library, sizeof(out->library), "AlphaMoE router %s%s%s%s", alphamoe_version_string(),
             commit ? " (commit " : "", commit ? commit : "", commit ? ")" : "");
    format_cuda_version(run->device->driver_version, out->driver, sizeof(out->driver));
    format_cuda_version(run->device->runtime_version, out->runtime, sizeof(out->runtime));
}

void print_shape_list(const bench_shape *shapes, int32_t n) {
    printf("%5s  %-36s %6s %6s %4s %8s  %-10s %s\n", "index", "shape", "E", "M", "k", "block_m", "target",
           "stock us (reference)");
    for (int32_t i = 0; i < n; ++i) {
        const bench_shape *s = &shapes[i];
        char target[24];
        format_target(s, target, sizeof(target));
        printf("%5d  %-36s %6d %6d %4d %8d  %-10s ", (int)i, s->name, (int)s->experts, (int)s->tokens,
               (int)s->top_k, (int)s->block_m, target);
        if (s->stock_us > 0.0) printf("%.2f\n", s->stock_us);
        else printf("-\n");
    }
    printf("stock us: reference figures, not measured by this program: %s.\n", kStockReference.what);
}

void print_run_header(const bench_run *run) {
    const bench_device *d = run->device;
    const sampling_plan *p = &run->plan.sampling;
    run_names names;
    name_run(run, &names);
    printf(BENCH_PROG ": %s on %s (device %d, compute capability %d.%d, image sm_%da), %d SMs, L2 %.1f MiB\n",
           names.library, d->name, (int)d->ordinal, (int)(d->compute_capability / 10),
           (int)(d->compute_capability % 10), (int)d->image_arch, (int)d->sm_count,
           (double)d->l2_bytes / (1024.0 * 1024.0));
    printf("CUDA driver %s, runtime %s, CUPTI %s\n", names.driver, names.runtime, trace_version());
    printf("method: CUPTI kernel records (end - start) summed per sample; a %.1f MiB memset evicts L2 before\n"
           "        every sample; %d warm-up samples, then %d rounds x %d samples; figure = median of the round\n"
           "        medians, spread = smallest..largest round median. graph/call = one CUDA graph of %d back-to-back\n"
           "        calls replayed %d times (CUDA events, no tracing, L2 warm), median / %d.\n",
           (double)d->l2_evict_bytes / (1024.0 * 1024.0), (int)p->warmup, (int)p->rounds, (int)p->samples,
           GRAPH_CALLS, (int)run->plan.graph_replays, GRAPH_CALLS);
    if (d->evict_code)
        printf("cold code: after each memset a kernel runs %lld KiB of straight-line code on every SM, so the\n"
               "        sample's kernels (floors included) fetch their instructions from device memory.\n",
               (long long)(bench_code_evict_bytes() / 1024));
    if (run->plan.with_cold_code)
        printf("cold code column: each shape measured again with a kernel running %lld KiB of straight-line code on\n"
               "        every SM after each memset, so the sample's kernels fetch their instructions from memory.\n",
               (long long)(bench_code_evict_bytes() / 1024));
    printf("logits: uniform random in [-1, 1), seed %llu; every configuration is checked against\n"
           "        alphamoe_route_host before it is timed.\n",
           (unsigned long long)run->plan.seed);
}

int floor_lines(const floor_figures *f, floor_line out[FLOOR_LINES]) {
    int n = 0;
    snprintf(out[n].what, sizeof(out[n].what), "empty kernel, 1 CTA x %d threads", FLOOR_BLOCK_THREADS);
    out[n++].stats = &f->empty;
    snprintf(out[n].what, sizeof(out[n].what), "empty kernel, per call in a graph of %d launches", GRAPH_CALLS);
    out[n].stats = NULL;
    out[n++].value_us = f->empty_graph_per_call_us;
    snprintf(out[n].what, sizeof(out[n].what), "one row: %d logits read, their maximum stored", FLOOR_ROW_FLOATS);
    out[n++].stats = &f->one_row;
    snprintf(out[n].what, sizeof(out[n].what), "%d rows: a warp each, their maxima stored", FLOOR_FEW_ROWS);
    out[n++].stats = &f->few_rows;
    snprintf(out[n].what, sizeof(out[n].what), "one grid barrier, %d CTAs x %d threads, cooperative",
             (int)f->barrier_ctas, FLOOR_BLOCK_THREADS);
    out[n++].stats = &f->barrier;
    snprintf(out[n].what, sizeof(out[n].what), "device-to-device copy of %.2f MB (E512 M16384 logits)",
             (double)f->copy_bytes * 1e-6);
    out[n++].stats = &f->copy;
    for (int i = 0; i < READ_FLOOR_COUNT; ++i) {
        const read_floor *r = &f->reads[i];
        snprintf(out[n].what, sizeof(out[n].what), "read once of %.2f MB (E512 M%d logits), %.0f GB/s",
                 (double)r->bytes * 1e-6, (int)r->tokens, (double)r->bytes / r->read.median_us * 1e-3);
        out[n++].stats = &r->read;
        snprintf(out[n].what, sizeof(out[n].what), "the same by the bulk copy engine, %.0f GB/s",
                 (double)r->bytes / r->bulk.median_us * 1e-3);
        out[n++].stats = &r->bulk;
    }
    return n;
}

void print_floors(const bench_run *run) {
    floor_line lines[FLOOR_LINES];
    const int n = floor_lines(&run->floors, lines);
    printf("\nfloors (this run, L2 evicted, CUPTI):\n");
    for (int i = 0; i < n; ++i) {
        const round_stats *s = lines[i].stats;
        if (s)
            printf("  %-56s %8.2f us  (%.2f..%.2f)\n", lines[i].what, s->median_us, s->spread_min_us, s->spread_max_us);
        else printf("  %-56s %8.2f us\n", lines[i].what, lines[i].value_us);
        if (s == &run->floors.copy)
            printf("  memory rate %.0f GB/s (bytes read + written by the copy / its time);\n"
                   "  a shape's bandwidth floor = its logits bytes / this rate\n",
                   run->floors.copy_bytes_per_us * 1e-3);
    }
}

static void print_shape_row(const bench_run *run, const shape_result *r) {
    const bench_shape *s = r->shape;
    char spread[64], target[64], verdict[48], shared[32];
    snprintf(spread, sizeof(spread), "%.2f..%.2f", r->kernel.spread_min_us, r->kernel.spread_max_us);
    format_shape_target(r, target, sizeof(target));
    format_verdict(r, verdict, sizeof(verdict));
    if (r->shared_check != CHECK_NONE)
        snprintf(shared, sizeof(shared), "%+.1f%%", 100.0 * (r->kernel.median_us / r->routed_us - 1.0));
    else snprintf(shared, sizeof(shared), "-");
    printf("%-26s %-6s %5d %9.2f %-13s", s->name, spec_name(r->selection.specialization), (int)r->selection.grid_ctas,
           r->kernel.median_us, spread);
    if (run->plan.with_cold_code) printf(" %9.2f", r->cold_code.median_us);
    printf(" %10.2f %-9s %8.2f %6.2f %-16s %7s %-18s", r->graph_per_call_us, r->floor_name, r->floor_us, r->ratio,
           target, shared, verdict);
    if (stock_applies(run->device->name)) {
        if (s->stock_us > 0.0) printf(" %.2f (%.1fx)", s->stock_us, s->stock_us / r->kernel.median_us);
        else printf(" -");
    }
    printf("\n");
}

void print_shape_table(const bench_run *run) {
    const bool stock = stock_applies(run->device->name);
    printf("\n%-26s %-6s %5s %9s %-13s", "shape", "spec", "grid", "kernel us", "spread");
    if (run->plan.with_cold_code) printf(" %9s", "cold code");
    printf(" %10s %-9s %8s %6s %-16s %7s %-18s", "graph/call", "floor", "floor us", "ratio", "target", "shared",
           "verdict");
    if (stock) printf(" stock us on %s, reference, not this run (speedup)", kStockReference.gpu);
    printf("\n");
    for (int32_t i = 0; i < run->shape_count; ++i) print_shape_row(run, &run->shapes[i]);
    printf("ratio = kernel / the bounding floor (the largest of: one row; %d rows where a CTA holds that many\n"
           "tokens or more, of rows at least as wide; grid barrier when the grid meets at one: large, small\n"
           "above 8 CTAs; bandwidth). verdict: time = kernel median within target;\n"
           "graph = graph/call within %.1f us of the kernel median; shared = shared-expert mode within %.0f%% of\n"
           "its routed twin (the shared column).\n",
           FLOOR_FEW_ROWS, GRAPH_OVERHEAD_LIMIT_US, 100.0 * SHARED_OVERHEAD_LIMIT);
    if (run->plan.with_cold_code)
        printf("cold code = the kernel figure again with the instruction caches evicted too (--cold-code).\n");
    if (stock) printf("stock = %s; not measured in this run.\n", kStockReference.what);
}

void print_pdl_table(const bench_run *run) {
    if (run->pdl_count == 0) return;
    printf("\nprogrammatic dependent launch: producer kernel (%d CTAs x %d threads: compute, launch_dependents, store\n"
           "the logits) then the router; pair = first kernel start to last kernel end (CUPTI, L2 evicted);\n"
           "graph = per pair in a graph of %d pairs\n",
           (int)run->device->sm_count, PRODUCER_BLOCK_THREADS, GRAPH_CALLS);
    printf("%-22s %11s %12s %12s %8s %13s %13s %8s\n", "shape", "producer us", "serial us", "PDL us", "gain us",
           "graph serial", "graph PDL", "gain us");
    for (int32_t i = 0; i < run->pdl_count; ++i) {
        const pdl_result *p = &run->pdl[i];
        char serial[24] = "n/a", dependent[24] = "n/a", gain[24] = "n/a";
        if (p->graph_serial_us >= 0.0) snprintf(serial, sizeof(serial), "%.2f", p->graph_serial_us);
        if (p->graph_dependent_us >= 0.0) snprintf(dependent, sizeof(dependent), "%.2f", p->graph_dependent_us);
        if (p->graph_serial_us >= 0.0 && p->graph_dependent_us >= 0.0)
            snprintf(gain, sizeof(gain), "%.2f", p->graph_serial_us - p->graph_dependent_us);
        printf("%-22s %11.2f %12.2f %12.2f %8.2f %13s %13s %8s\n", p->shape->name, p->producer.median_us,
               p->serial.median_us, p->dependent.median_us, p->serial.median_us - p->dependent.median_us, serial,
               dependent, gain);
    }
}
