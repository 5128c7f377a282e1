#include "bench_export.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench_check.h"
#include "bench_report.h"
#include "code_evict.h"
#include "cupti_trace.h"
#include "graph_replay.h"

static const char *check_name(check_state c) {
    return c == CHECK_PASS ? "pass" : c == CHECK_MISS ? "miss" : "";
}

FILE *open_output(const char *path) {
    FILE *f = fopen(path, "w");
    if (f == NULL) fprintf(stderr, BENCH_PROG ": cannot write %s: %s\n", path, strerror(errno));
    return f;
}

int close_output(FILE *f, const char *path) {
    const bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed) {
        fprintf(stderr, BENCH_PROG ": writing %s failed\n", path);
        return -1;
    }
    return 0;
}

/* ---- CSV ---------------------------------------------------------------- */

#define CSV_HEADER                                                                                                  \
    "kind,name,experts,tokens,top_k,block_m,shared,forced,specialization,grid_ctas,median_us,spread_min_us,"       \
    "spread_max_us,best_us,rounds,samples,graph_per_call_us,floor,floor_us,bandwidth_floor_us,ratio,target_us,"     \
    "time_check,graph_check,shared_check,stock_us,cold_code_us\n"

static void csv_stats(FILE *f, const round_stats *s) {
    fprintf(f, "%.4f,%.4f,%.4f,%.4f,%d,%d", s->median_us, s->spread_min_us, s->spread_max_us, s->best_us,
            (int)s->rounds, (int)s->samples);
}

/* graph_us: per call in a graph, or GRAPH_NOT_MEASURED. */
static void csv_floor(FILE *f, const char *name, const round_stats *s, double graph_us) {
    fprintf(f, "floor,%s,,,,,,,,,", name);
    csv_stats(f, s);
    fprintf(f, ",");
    if (graph_us >= 0.0) fprintf(f, "%.4f", graph_us);
    fprintf(f, ",,,,,,,,,,\n");
}

/* stock: whether the run's device is the one the stock figures were measured on. */
static void csv_shape(FILE *f, const shape_result *r, bool stock) {
    const bench_shape *s = r->shape;
    fprintf(f, "shape,%s,%d,%d,%d,%d,%d,auto,%s,%d,", s->name, (int)s->experts, (int)s->tokens, (int)s->top_k,
            (int)s->block_m, s->shared ? 1 : 0, spec_name(r->selection.specialization), (int)r->selection.grid_ctas);
    csv_stats(f, &r->kernel);
    fprintf(f, ",%.4f,%s,%.4f,%.4f,%.4f,", r->graph_per_call_us, r->floor_name, r->floor_us, r->bandwidth_floor_us,
            r->ratio);
    if (r->target_us > 0.0) fprintf(f, "%.4f", r->target_us);
    fprintf(f, ",%s,%s,%s,", check_name(r->time_check), check_name(r->graph_check), check_name(r->shared_check));
    if (stock && s->stock_us > 0.0) fprintf(f, "%.2f", s->stock_us);
    fprintf(f, ",");
    if (r->have_cold_code) fprintf(f, "%.4f", r->cold_code.median_us);
    fprintf(f, "\n");
}

static void csv_pdl_row(FILE *f, const char *kind, const bench_shape *s, const round_stats *st, double graph_us) {
    fprintf(f, "%s,%s,%d,%d,%d,%d,%d,auto,,,", kind, s->name, (int)s->experts, (int)s->tokens, (int)s->top_k,
            (int)s->block_m, s->shared ? 1 : 0);
    csv_stats(f, st);
    fprintf(f, ",");
    if (graph_us >= 0.0) fprintf(f, "%.4f", graph_us);
    fprintf(f, ",,,,,,,,,,\n");
}

static void csv_sweep(FILE *f, const sweep_point *p) {
    fprintf(f, "sweep,%s,%d,%d,%d,%d,%d,%s,%s,%d,", p->family, (int)p->experts, (int)p->tokens, (int)p->top_k,
            (int)p->block_m, p->shared ? 1 : 0, spec_name(p->forced), spec_name(p->selection.specialization),
            (int)p->selection.grid_ctas);
    csv_stats(f, &p->kernel);
    fprintf(f, ",,,,,,,,,,,\n");
}

int write_csv(const bench_run *run, const char *path) {
    FILE *f = open_output(path);
    if (f == NULL) return -1;
    fputs(CSV_HEADER, f);
    if (run->have_floors) {
        csv_floor(f, "empty", &run->floors.empty, run->floors.empty_graph_per_call_us);
        csv_floor(f, "one_row", &run->floors.one_row, GRAPH_NOT_MEASURED);
        csv_floor(f, "few_rows", &run->floors.few_rows, GRAPH_NOT_MEASURED);
        csv_floor(f, "barrier", &run->floors.barrier, GRAPH_NOT_MEASURED);
        csv_floor(f, "copy", &run->floors.copy, GRAPH_NOT_MEASURED);
        for (int i = 0; i < READ_FLOOR_COUNT; ++i) {
            char name[32];
            snprintf(name, sizeof(name), "read_m%d", (int)run->floors.reads[i].tokens);
            csv_floor(f, name, &run->floors.reads[i].read, GRAPH_NOT_MEASURED);
            snprintf(name, sizeof(name), "read_bulk_m%d", (int)run->floors.reads[i].tokens);
            csv_floor(f, name, &run->floors.reads[i].bulk, GRAPH_NOT_MEASURED);
        }
    }
    for (int32_t i = 0; i < run->shape_count; ++i) csv_shape(f, &run->shapes[i], stock_applies(run->device->name));
    for (int32_t i = 0; i < run->pdl_count; ++i) {
        const pdl_result *p = &run->pdl[i];
        csv_pdl_row(f, "pdl_producer", p->shape, &p->producer, GRAPH_NOT_MEASURED);
        csv_pdl_row(f, "pdl_serial", p->shape, &p->serial, p->graph_serial_us);
        csv_pdl_row(f, "pdl_dependent", p->shape, &p->dependent, p->graph_dependent_us);
    }
    for (int32_t i = 0; i < run->sweep.count; ++i) csv_sweep(f, &run->sweep.points[i]);
    return close_output(f, path);
}

/* ---- JSON --------------------------------------------------------------- */

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; ++s) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* A figure that may be missing (negative): null. */
static void json_optional(FILE *f, double v) {
    if (v >= 0.0) fprintf(f, "%.4f", v);
    else fprintf(f, "null");
}

static void json_stats(FILE *f, const char *key, const round_stats *s) {
    fprintf(f, "\"%s\": {\"median_us\": %.4f, \"spread_us\": [%.4f, %.4f], \"best_us\": %.4f, \"rounds\": %d, "
               "\"samples\": %d}",
            key, s->median_us, s->spread_min_us, s->spread_max_us, s->best_us, (int)s->rounds, (int)s->samples);
}

static void json_header(FILE *f, const bench_run *run) {
    const bench_device *d = run->device;
    const sampling_plan *p = &run->plan.sampling;
    fprintf(f, "{\n  \"tool\": \"" BENCH_PROG "\",\n  \"library_version\": ");
    json_string(f, alphamoe_version_string());
    fprintf(f, ",\n  \"commit\": ");
    if (library_commit()) json_string(f, library_commit());
    else fprintf(f, "null");
    fprintf(f, ",\n  \"device\": {\"name\": ");
    json_string(f, d->name);
    fprintf(f, ", \"ordinal\": %d, \"compute_capability\": %d, \"image_arch\": %d, \"multiprocessors\": %d, "
               "\"l2_bytes\": %lld, \"driver_version\": %d, \"runtime_version\": %d, \"cupti\": ",
            (int)d->ordinal, (int)d->compute_capability, (int)d->image_arch, (int)d->sm_count, (long long)d->l2_bytes,
            (int)d->driver_version, (int)d->runtime_version);
    json_string(f, trace_version());
    fprintf(f, "},\n  \"method\": {\"metric\": \"CUPTI kernel end - start, summed per sample\", \"l2_evict_bytes\": "
               "%zu, \"warmup\": %d, \"rounds\": %d, \"samples\": %d, \"graph_calls\": %d, \"graph_replays\": %d, "
               "\"seed\": %llu, \"code_evict_bytes\": %lld, \"with_cold_code\": %s}",
            d->l2_evict_bytes, (int)p->warmup, (int)p->rounds, (int)p->samples, GRAPH_CALLS,
            (int)run->plan.graph_replays, (unsigned long long)run->plan.seed,
            (long long)(d->evict_code || run->plan.with_cold_code ? bench_code_evict_bytes() : 0),
            run->plan.with_cold_code ? "true" : "false");
    /* The shapes' stock_us are this reference's figures, given only on its GPU. */
    fprintf(f, ",\n  \"stock_reference\": {\"gpu\": ");
    json_string(f, kStockReference.gpu);
    fprintf(f, ", \"what\": ");
    json_string(f, kStockReference.what);
    fprintf(f, ", \"shown\": %s}", stock_applies(d->name) ? "true" : "false");
}

static void json_floors(FILE *f, const floor_figures *fl) {
    fprintf(f, ",\n  \"floors\": {");
    json_stats(f, "empty", &fl->empty);
    fprintf(f, ", \"empty_graph_per_call_us\": %.4f, ", fl->empty_graph_per_call_us);
    json_stats(f, "one_row", &fl->one_row);
    fprintf(f, ", ");
    json_stats(f, "few_rows", &fl->few_rows);
    fprintf(f, ", \"few_rows_count\": %d, ", FLOOR_FEW_ROWS);
    json_stats(f, "barrier", &fl->barrier);
    fprintf(f, ", \"barrier_ctas\": %d, ", (int)fl->barrier_ctas);
    json_stats(f, "copy", &fl->copy);
    fprintf(f, ", \"copy_bytes\": %lld, \"copy_gb_per_s\": %.2f", (long long)fl->copy_bytes,
            fl->copy_bytes_per_us * 1e-3);
    for (int i = 0; i < READ_FLOOR_COUNT; ++i) {
        char name[32];
        snprintf(name, sizeof(name), "read_m%d", (int)fl->reads[i].tokens);
        fprintf(f, ", ");
        json_stats(f, name, &fl->reads[i].read);
        fprintf(f, ", \"%s_bytes\": %lld, ", name, (long long)fl->reads[i].bytes);
        snprintf(name, sizeof(name), "read_bulk_m%d", (int)fl->reads[i].tokens);
        json_stats(f, name, &fl->reads[i].bulk);
    }
    fprintf(f, "}");
}

static void json_check(FILE *f, const char *key, check_state c) {
    fprintf(f, ", \"%s\": ", key);
    if (c == CHECK_NONE) fprintf(f, "null");
    else fprintf(f, "\"%s\"", check_name(c));
}

static void json_shape(FILE *f, const shape_result *r, bool stock) {
    const bench_shape *s = r->shape;
    fprintf(f, "    {\"name\": \"%s\", \"experts\": %d, \"tokens\": %d, \"top_k\": %d, \"block_m\": %d, \"shared\": %s, "
               "\"specialization\": \"%s\", \"grid_ctas\": %d, ",
            s->name, (int)s->experts, (int)s->tokens, (int)s->top_k, (int)s->block_m, s->shared ? "true" : "false",
            spec_name(r->selection.specialization), (int)r->selection.grid_ctas);
    json_stats(f, "kernel", &r->kernel);
    fprintf(f, ", \"graph_per_call_us\": %.4f, \"floor\": \"%s\", \"floor_us\": %.4f, \"bandwidth_floor_us\": %.4f, "
               "\"ratio\": %.4f, \"target_us\": ",
            r->graph_per_call_us, r->floor_name, r->floor_us, r->bandwidth_floor_us, r->ratio);
    if (r->target_us > 0.0) fprintf(f, "%.4f", r->target_us);
    else fprintf(f, "null");
    json_check(f, "time_check", r->time_check);
    json_check(f, "graph_check", r->graph_check);
    json_check(f, "shared_check", r->shared_check);
    if (r->have_cold_code) {
        fprintf(f, ", ");
        json_stats(f, "cold_code", &r->cold_code);
    }
    fprintf(f, ", \"stock_us\": ");
    if (stock && s->stock_us > 0.0) fprintf(f, "%.2f}", s->stock_us);
    else fprintf(f, "null}");
}

static void json_pdl(FILE *f, const pdl_result *p) {
    fprintf(f, "    {\"name\": \"%s\", ", p->shape->name);
    json_stats(f, "producer", &p->producer);
    fprintf(f, ", ");
    json_stats(f, "serial", &p->serial);
    fprintf(f, ", ");
    json_stats(f, "dependent", &p->dependent);
    fprintf(f, ", \"gain_us\": %.4f, \"graph_serial_us\": ", p->serial.median_us - p->dependent.median_us);
    json_optional(f, p->graph_serial_us);
    fprintf(f, ", \"graph_dependent_us\": ");
    json_optional(f, p->graph_dependent_us);
    fprintf(f, "}");
}

static void json_sweep_point(FILE *f, const sweep_point *p) {
    fprintf(f, "    {\"family\": \"%s\", \"tokens\": %d, \"forced\": \"%s\", \"specialization\": \"%s\", "
               "\"grid_ctas\": %d, ",
            p->family, (int)p->tokens, spec_name(p->forced), spec_name(p->selection.specialization),
            (int)p->selection.grid_ctas);
    json_stats(f, "kernel", &p->kernel);
    fprintf(f, "}");
}

int write_json(const bench_run *run, const char *path) {
    FILE *f = open_output(path);
    if (f == NULL) return -1;
    json_header(f, run);
    if (run->have_floors) json_floors(f, &run->floors);
    fprintf(f, ",\n  \"shapes\": [");
    for (int32_t i = 0; i < run->shape_count; ++i) {
        fprintf(f, "%s\n", i ? "," : "");
        json_shape(f, &run->shapes[i], stock_applies(run->device->name));
    }
    fprintf(f, "%s],\n  \"pdl\": [", run->shape_count ? "\n  " : "");
    for (int32_t i = 0; i < run->pdl_count; ++i) {
        fprintf(f, "%s\n", i ? "," : "");
        json_pdl(f, &run->pdl[i]);
    }
    fprintf(f, "%s],\n  \"sweep\": [", run->pdl_count ? "\n  " : "");
    for (int32_t i = 0; i < run->sweep.count; ++i) {
        fprintf(f, "%s\n", i ? "," : "");
        json_sweep_point(f, &run->sweep.points[i]);
    }
    fprintf(f, "%s]\n}\n", run->sweep.count ? "\n  " : "");
    return close_output(f, path);
}
