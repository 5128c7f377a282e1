#include "bench_markdown.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bench_check.h"
#include "bench_export.h"
#include "bench_flavours.h"
#include "bench_report.h"
#include "code_evict.h"
#include "cupti_trace.h"
#include "graph_replay.h"

static void begin(FILE *f, const char *heading, const char *name) {
    if (heading) fprintf(f, "\n### %s\n", heading);
    fprintf(f, "\n<!-- alphamoe-bench:%s -->\n", name);
}

static void end(FILE *f, const char *name) { fprintf(f, "<!-- /alphamoe-bench:%s -->\n", name); }

static void header(FILE *f, const bench_run *run) {
    const bench_device *d = run->device;
    const sampling_plan *p = &run->plan.sampling;
    run_names names;
    name_run(run, &names);
    begin(f, NULL, "header");
    fprintf(f, "%s on %s: %d SMs, compute capability %d.%d (image sm_%da), L2 %.1f MiB; CUDA driver %s, "
               "runtime %s, CUPTI %s.\n",
            names.library, d->name, (int)d->sm_count, (int)(d->compute_capability / 10), (int)(d->compute_capability % 10),
            (int)d->image_arch, (double)d->l2_bytes / (1024.0 * 1024.0), names.driver, names.runtime,
            trace_version());
    fprintf(f, "Kernel time: CUPTI kernel records summed per sample, a %.1f MiB memset evicting L2 before every "
               "sample%s; %d warm-up samples, then %d rounds of %d; the figure is the median of the round medians, "
               "the spread the smallest and largest round median. graph/call: one CUDA graph of %d back-to-back "
               "calls replayed %d times (CUDA events, L2 warm), median / %d.",
            (double)d->l2_evict_bytes / (1024.0 * 1024.0),
            d->evict_code ? " and a kernel evicting the instruction caches after it (--cold-code)" : "",
            (int)p->warmup, (int)p->rounds, (int)p->samples, GRAPH_CALLS, (int)run->plan.graph_replays, GRAPH_CALLS);
    if (run->plan.with_cold_code)
        fprintf(f, " cold code: the kernel time again with a kernel running %lld KiB of straight-line code on every "
                   "SM after each memset, so the sample's kernels fetch their instructions from memory.",
                (long long)(bench_code_evict_bytes() / 1024));
    fprintf(f, " Logits uniform in [-1, 1), seed %llu; every configuration checked against alphamoe_route_host "
               "before it is timed.\n",
            (unsigned long long)run->plan.seed);
    end(f, "header");
}

static void floors(FILE *f, const bench_run *run) {
    floor_line lines[FLOOR_LINES];
    const int n = floor_lines(&run->floors, lines);
    begin(f, "Floors", "floors");
    fprintf(f, "| floor | us | spread us |\n|---|---|---|\n");
    for (int i = 0; i < n; ++i) {
        const round_stats *s = lines[i].stats;
        if (s)
            fprintf(f, "| %s | %.2f | %.2f..%.2f |\n", lines[i].what, s->median_us, s->spread_min_us, s->spread_max_us);
        else fprintf(f, "| %s | %.2f | |\n", lines[i].what, lines[i].value_us);
    }
    fprintf(f, "| memory rate: bytes read and written by the copy / its time | %.0f GB/s | |\n",
            run->floors.copy_bytes_per_us * 1e-3);
    end(f, "floors");
}

/* The stock columns' titles: a reference, from another run on that GPU. */
static void stock_titles(FILE *f) {
    fprintf(f, " stock us (reference measured on %s, not in this run) | speedup over the reference |",
            kStockReference.gpu);
}

static void stock_cells(FILE *f, const shape_result *r) {
    if (r->shape->stock_us > 0.0)
        fprintf(f, " %.2f | %.1fx |", r->shape->stock_us, r->shape->stock_us / r->kernel.median_us);
    else fprintf(f, " | |");
}

static bool plain(const shape_result *r) { return r->shape->flavour == FLAVOUR_DEFAULT; }

/* The shapes `flavoured` picks out, every column the run measured. */
static void shapes(FILE *f, const bench_run *run, bool flavoured) {
    const bool cold = run->plan.with_cold_code;
    const bool stock = !flavoured && stock_applies(run->device->name);
    const char *name = flavoured ? "flavours" : "shapes";
    bool any = false;
    for (int32_t i = 0; i < run->shape_count; ++i) any |= plain(&run->shapes[i]) != flavoured;
    if (!any) return;
    begin(f, flavoured ? "Routing flavours" : "Shapes", name);
    fprintf(f, "| shape | specialization | CTAs | kernel us | spread us |%s graph/call us | bounding floor us | "
               "ratio | target | verdict |",
            cold ? " cold code us |" : "");
    if (stock) stock_titles(f);
    fprintf(f, "\n|---|---|---|---|---|%s---|---|---|---|---|%s\n", cold ? "---|" : "", stock ? "---|---|" : "");
    for (int32_t i = 0; i < run->shape_count; ++i) {
        const shape_result *r = &run->shapes[i];
        if (plain(r) == flavoured) continue;
        char target[64], verdict[48];
        format_shape_target(r, target, sizeof(target));
        format_verdict(r, verdict, sizeof(verdict));
        fprintf(f, "| %s | %s | %d | %.2f | %.2f..%.2f |", r->shape->name, spec_name(r->selection.specialization),
                (int)r->selection.grid_ctas, r->kernel.median_us, r->kernel.spread_min_us, r->kernel.spread_max_us);
        if (cold) fprintf(f, " %.2f |", r->cold_code.median_us);
        fprintf(f, " %.2f | %.2f %s | %.2f | %s | %s |", r->graph_per_call_us, r->floor_us, r->floor_name, r->ratio,
                target, verdict);
        if (stock) stock_cells(f, r);
        fprintf(f, "\n");
    }
    end(f, name);
}

/* The E512 routed shapes from one token to 16384: one line each. */
static bool headline_shape(const shape_result *r) {
    return plain(r) && !r->shape->shared && r->shape->experts == 512;
}

static void headline(FILE *f, const bench_run *run) {
    const bool cold = run->plan.with_cold_code;
    const bool stock = stock_applies(run->device->name);
    bool any = false;
    for (int32_t i = 0; i < run->shape_count; ++i) any |= headline_shape(&run->shapes[i]);
    if (!any) return;
    begin(f, "Headline", "headline");
    fprintf(f, "| shape | tokens | kernel us |%s graph/call us |", cold ? " cold code us |" : "");
    if (stock) stock_titles(f);
    fprintf(f, "\n|---|---|---|%s---|%s\n", cold ? "---|" : "", stock ? "---|---|" : "");
    for (int32_t i = 0; i < run->shape_count; ++i) {
        const shape_result *r = &run->shapes[i];
        if (!headline_shape(r)) continue;
        fprintf(f, "| %s | %d | %.2f |", r->shape->name, (int)r->shape->tokens, r->kernel.median_us);
        if (cold) fprintf(f, " %.2f |", r->cold_code.median_us);
        fprintf(f, " %.2f |", r->graph_per_call_us);
        if (stock) stock_cells(f, r);
        fprintf(f, "\n");
    }
    end(f, "headline");
}

static void pdl(FILE *f, const bench_run *run) {
    if (run->pdl_count == 0) return;
    begin(f, "Programmatic dependent launch", "pdl");
    fprintf(f, "A producer kernel (%d CTAs) stores the logits, then the router runs: the pair from first kernel start "
               "to last kernel end (CUPTI, L2 evicted), without and with ALPHAMOE_FLAG_PDL; graph: per pair in a graph "
               "of %d pairs.\n\n",
            (int)run->device->sm_count, GRAPH_CALLS);
    fprintf(f, "| shape | producer us | serial us | PDL us | gain us | graph serial us | graph PDL us | "
               "graph gain us |\n|---|---|---|---|---|---|---|---|\n");
    for (int32_t i = 0; i < run->pdl_count; ++i) {
        const pdl_result *p = &run->pdl[i];
        const bool graph = p->graph_serial_us >= 0.0 && p->graph_dependent_us >= 0.0;
        fprintf(f, "| %s | %.2f | %.2f | %.2f | %.2f |", p->shape->name, p->producer.median_us, p->serial.median_us,
                p->dependent.median_us, p->serial.median_us - p->dependent.median_us);
        if (graph)
            fprintf(f, " %.2f | %.2f | %.2f |\n", p->graph_serial_us, p->graph_dependent_us,
                    p->graph_serial_us - p->graph_dependent_us);
        else fprintf(f, " n/a | n/a | n/a |\n");
    }
    end(f, "pdl");
}

static void sweep(FILE *f, const bench_run *run) {
    const sweep_results *s = &run->sweep;
    if (s->count == 0) return;
    begin(f, "Specialization sweep", "sweep");
    fprintf(f, "Per family, every specialization forced and the library's choice: median kernel us [grid CTAs].\n");
    for (int32_t first = 0; first < s->count;) {
        int32_t last = first;
        while (last < s->count && strcmp(s->points[last].family, s->points[first].family) == 0)
            last += SWEEP_ROW_POINTS;
        fprintf(f, "\n%s:\n\n| M | tiny | small | large | auto | best |\n|---|---|---|---|---|---|\n",
                s->points[first].family);
        for (int32_t row = first; row + SWEEP_ROW_POINTS <= last; row += SWEEP_ROW_POINTS) {
            const sweep_point *p = &s->points[row];
            fprintf(f, "| %d |", (int)p->tokens);
            for (int32_t i = 0; i < SWEEP_FORCED; ++i)
                fprintf(f, " %.2f [%d] |", p[i].kernel.median_us, (int)p[i].selection.grid_ctas);
            const sweep_point *chosen = &p[SWEEP_FORCED];
            fprintf(f, " %.2f %s [%d] | %s |\n", chosen->kernel.median_us,
                    spec_name(chosen->selection.specialization), (int)chosen->selection.grid_ctas,
                    spec_name(sweep_best_of_row(p)->forced));
        }
        first = last;
    }
    end(f, "sweep");
}

static void entries(FILE *f, const bench_run *run) {
    const entry_results *r = &run->entries;
    if (r->count == 0) return;
    begin(f, "Entry points", "entries");
    fprintf(f, "Each entry point's best margin over the shapes where the library chooses it: the best other plan "
               "that computes the same results (another variant, the flavoured kernel for a plain call), "
               "less its own median kernel us. It earns its place at %.2f us or more.\n\n",
            ENTRY_WIN_MARGIN_US);
    fprintf(f, "| entry point | margin us | shape |\n|---|---|---|\n");
    for (int32_t e = 0; e < alphamoe_entry_point_count(); ++e) {
        const char *shape = NULL;
        const double margin = entry_best_margin(r, e, &shape);
        if (shape == NULL)
            fprintf(f, "| %s | | chosen on no shape measured |\n", alphamoe_entry_point_name(e));
        else if (isinf(margin))
            fprintf(f, "| %s | only plan | %s |\n", alphamoe_entry_point_name(e), shape);
        else
            fprintf(f, "| %s | %+.2f | %s |\n", alphamoe_entry_point_name(e), margin, shape);
    }
    end(f, "entries");
}

int write_markdown(const bench_run *run, const char *path) {
    FILE *f = open_output(path);
    if (f == NULL) return -1;
    fprintf(f, "<!-- Written by " BENCH_PROG " --markdown: regenerate it, do not edit it. -->\n");
    header(f, run);
    if (run->shape_count > 0) headline(f, run);
    if (run->have_floors) floors(f, run);
    shapes(f, run, false);
    shapes(f, run, true);
    pdl(f, run);
    sweep(f, run);
    entries(f, run);
    return close_output(f, path);
}
