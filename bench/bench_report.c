#include "bench_report.h"

#include <stdio.h>
#include <string.h>

#include "alphamoe/router_diagnostics.h"
#include "bench_check.h"
#include "code_evict.h"
#include "cupti_trace.h"
#include "floor_kernels.h"
#include "graph_replay.h"

static const char *spec_name(alphamoe_specialization s) {
    const char *name = alphamoe_specialization_name(s);
    return name ? name : "?";
}

static void cuda_version(int32_t v, char *buf, size_t size) {
    snprintf(buf, size, "%d.%d", (int)(v / 1000), (int)(v % 1000 / 10));
}

void print_shape_list(const bench_shape *shapes, int32_t n) {
    printf("%5s  %-36s %6s %6s %4s %8s  %-10s %s\n", "index", "shape", "E", "M", "k", "block_m", "target", "stock us");
    for (int32_t i = 0; i < n; ++i) {
        const bench_shape *s = &shapes[i];
        char target[24];
        format_target(s, target, sizeof(target));
        printf("%5d  %-36s %6d %6d %4d %8d  %-10s ", (int)i, s->name, (int)s->experts, (int)s->tokens,
               (int)s->top_k, (int)s->block_m, target);
        if (s->stock_us > 0.0) printf("%.2f\n", s->stock_us);
        else printf("-\n");
    }
}

void print_run_header(const bench_run *run) {
    const bench_device *d = run->device;
    const sampling_plan *p = &run->plan.sampling;
    char driver[16], runtime[16];
    cuda_version(d->driver_version, driver, sizeof(driver));
    cuda_version(d->runtime_version, runtime, sizeof(runtime));
    printf(BENCH_PROG ": AlphaMoE router %s on %s (device %d, compute capability %d.%d, image sm_%da), %d SMs, "
                      "L2 %.1f MiB\n",
           alphamoe_version_string(), d->name, (int)d->ordinal, (int)(d->compute_capability / 10),
           (int)(d->compute_capability % 10), (int)d->image_arch, (int)d->sm_count,
           (double)d->l2_bytes / (1024.0 * 1024.0));
    printf("CUDA driver %s, runtime %s, CUPTI %s\n", driver, runtime, trace_version());
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
    printf("logits: uniform random in [-1, 1), seed %llu; every configuration is checked against\n"
           "        alphamoe_route_host before it is timed.\n",
           (unsigned long long)run->plan.seed);
}

static void print_floor_line(const char *what, const round_stats *s) {
    printf("  %-56s %8.2f us  (%.2f..%.2f)\n", what, s->median_us, s->spread_min_us, s->spread_max_us);
}

void print_floors(const bench_run *run) {
    const floor_figures *f = &run->floors;
    char what[96];
    printf("\nfloors (this run, L2 evicted, CUPTI):\n");
    snprintf(what, sizeof(what), "empty kernel, 1 CTA x %d threads", FLOOR_BLOCK_THREADS);
    print_floor_line(what, &f->empty);
    snprintf(what, sizeof(what), "empty kernel, per call in a graph of %d launches", GRAPH_CALLS);
    printf("  %-56s %8.2f us\n", what, f->empty_graph_per_call_us);
    snprintf(what, sizeof(what), "one row: %d logits read, their maximum stored", FLOOR_ROW_FLOATS);
    print_floor_line(what, &f->one_row);
    snprintf(what, sizeof(what), "%d rows: a warp each, their maxima stored", FLOOR_FEW_ROWS);
    print_floor_line(what, &f->few_rows);
    snprintf(what, sizeof(what), "one grid barrier, %d CTAs x %d threads, cooperative", (int)f->barrier_ctas,
             FLOOR_BLOCK_THREADS);
    print_floor_line(what, &f->barrier);
    snprintf(what, sizeof(what), "device-to-device copy of %.2f MB (E512 M16384 logits)", (double)f->copy_bytes * 1e-6);
    print_floor_line(what, &f->copy);
    printf("  memory rate %.0f GB/s (bytes read + written by the copy / its time);\n"
           "  a shape's bandwidth floor = its logits bytes / this rate\n",
           f->copy_bytes_per_us * 1e-3);
    for (int i = 0; i < READ_FLOOR_COUNT; ++i) {
        const read_floor *r = &f->reads[i];
        snprintf(what, sizeof(what), "read once of %.2f MB (E512 M%d logits), %.0f GB/s", (double)r->bytes * 1e-6,
                 (int)r->tokens, (double)r->bytes / r->read.median_us * 1e-3);
        print_floor_line(what, &r->read);
    }
}

static void print_shape_row(const shape_result *r) {
    const bench_shape *s = r->shape;
    char spread[64], target[64], verdict[48], stock[64], shared[32];
    snprintf(spread, sizeof(spread), "%.2f..%.2f", r->kernel.spread_min_us, r->kernel.spread_max_us);
    format_target(s, target, sizeof(target));
    if (s->target == TARGET_BANDWIDTH_RATIO) { /* the resolved bound, us */
        const size_t used = strlen(target);
        snprintf(target + used, sizeof(target) - used, "=%.1f", r->target_us);
    }
    format_verdict(r, verdict, sizeof(verdict));
    if (s->stock_us > 0.0) snprintf(stock, sizeof(stock), "%.2f (%.1fx)", s->stock_us, s->stock_us / r->kernel.median_us);
    else snprintf(stock, sizeof(stock), "-");
    if (r->shared_check != CHECK_NONE)
        snprintf(shared, sizeof(shared), "%+.1f%%", 100.0 * (r->kernel.median_us / r->routed_us - 1.0));
    else snprintf(shared, sizeof(shared), "-");
    printf("%-26s %-6s %5d %9.2f %-13s %10.2f %-9s %8.2f %6.2f %-16s %7s %-18s %s\n", s->name,
           spec_name(r->selection.specialization), (int)r->selection.grid_ctas, r->kernel.median_us, spread,
           r->graph_per_call_us, r->floor_name, r->floor_us, r->ratio, target, shared, verdict, stock);
}

void print_shape_table(const bench_run *run) {
    printf("\n%-26s %-6s %5s %9s %-13s %10s %-9s %8s %6s %-16s %7s %-18s %s\n", "shape", "spec", "grid", "kernel us",
           "spread", "graph/call", "floor", "floor us", "ratio", "target", "shared", "verdict", "stock us (speedup)");
    for (int32_t i = 0; i < run->shape_count; ++i) print_shape_row(&run->shapes[i]);
    printf("ratio = kernel / the bounding floor (the largest of: one row; %d rows where a CTA holds that many\n"
           "tokens or more, of rows at least as wide; grid barrier when the grid meets at one: large, small\n"
           "above 8 CTAs; bandwidth). verdict: time = kernel median within target;\n"
           "graph = graph/call within %.1f us of the kernel median; shared = shared-expert mode within %.0f%% of\n"
           "its routed twin (the shared column). stock = the stock top-k + align pipeline on the H200, CUPTI,\n"
           "L2 evicted.\n",
           FLOOR_FEW_ROWS, GRAPH_OVERHEAD_LIMIT_US, 100.0 * SHARED_OVERHEAD_LIMIT);
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
