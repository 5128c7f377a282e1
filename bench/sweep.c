#include "sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_check.h"
#include "bench_flavours.h"
#include "bench_fixture.h"

static const int32_t kForced[] = {ALPHAMOE_SPECIALIZATION_TINY, ALPHAMOE_SPECIALIZATION_SMALL,
                                  ALPHAMOE_SPECIALIZATION_LARGE, ALPHAMOE_SPECIALIZATION_AUTO};
_Static_assert(sizeof(kForced) / sizeof(kForced[0]) == SWEEP_ROW_POINTS, "a row is every forced one and auto");

static bool same_family(const bench_shape *a, const bench_shape *b) {
    return a->experts == b->experts && a->top_k == b->top_k && a->block_m == b->block_m && a->shared == b->shared &&
           a->flavour == b->flavour;
}

static sweep_point *append_point(sweep_results *r) {
    if (r->count == r->capacity) {
        const int32_t capacity = r->capacity ? 2 * r->capacity : 256;
        sweep_point *grown = realloc(r->points, (size_t)capacity * sizeof(*grown));
        if (grown == NULL) return NULL;
        r->points = grown;
        r->capacity = capacity;
    }
    sweep_point *p = &r->points[r->count++];
    memset(p, 0, sizeof(*p));
    return p;
}

static int measure_point(bench_device *d, const shape_run_plan *plan, sweep_point *p) {
    const fixture_spec spec = {p->experts, p->tokens, p->top_k, p->block_m, p->shared, 0u, p->forced, p->flavour};
    char label[96];
    snprintf(label, sizeof(label), "%s M=%d %s", p->family, (int)p->tokens, spec_name(p->forced));
    route_fixture f;
    int rc = bench_fixture_create(&f, &spec, d, &p->selection);
    if (rc == 0) rc = bench_fixture_fill_logits(&f, plan->seed);
    if (rc == 0) rc = verify_route(&f, d, issue_route, &f, label);
    const workload w = {label, issue_route, &f, 1, 0, METRIC_KERNEL_SUM};
    if (rc == 0) rc = measure_cold(d, &w, &plan->sampling, &p->kernel);
    fixture_destroy(&f);
    if (rc != 0) fprintf(stderr, BENCH_PROG ": sweep point %s failed\n", label);
    return rc;
}

const sweep_point *sweep_best_of_row(const sweep_point *row) {
    const sweep_point *best = &row[0];
    for (int32_t i = 1; i < SWEEP_FORCED; ++i)
        if (row[i].kernel.median_us < best->kernel.median_us) best = &row[i];
    return best;
}

static void print_family_header(const char *family, const sweep_point *first) {
    printf("\nsweep %s: median CUPTI kernel time, L2 evicted, us (%d rounds x %d samples); [grid CTAs]\n", family,
           (int)first->kernel.rounds, (int)first->kernel.samples);
    printf("%7s %16s %16s %16s %22s %7s\n", "M", "tiny", "small", "large", "auto", "best");
}

static void print_row(const sweep_point *row) {
    printf("%7d", (int)row[0].tokens);
    for (int32_t i = 0; i < SWEEP_FORCED; ++i) {
        char cell[32];
        snprintf(cell, sizeof(cell), "%.2f [%d]", row[i].kernel.median_us, (int)row[i].selection.grid_ctas);
        printf(" %16s", cell);
    }
    char cell[40];
    snprintf(cell, sizeof(cell), "%.2f %s [%d]", row[3].kernel.median_us, spec_name(row[3].selection.specialization),
             (int)row[3].selection.grid_ctas);
    printf(" %22s %7s\n", cell, spec_name(sweep_best_of_row(row)->forced));
    fflush(stdout);
}

/* "tiny 1..16, small 24..512, large 768..16384": runs of the same best. */
static void print_best_runs(const sweep_point *points, int32_t rows) {
    printf("best per M:");
    int32_t start = 0;
    for (int32_t r = 1; r <= rows; ++r) {
        const int32_t best = sweep_best_of_row(&points[start * SWEEP_ROW_POINTS])->forced;
        if (r < rows && sweep_best_of_row(&points[r * SWEEP_ROW_POINTS])->forced == best) continue;
        printf("%s %s %d..%d", start == 0 ? "" : ",", spec_name(best), (int)points[start * SWEEP_ROW_POINTS].tokens,
               (int)points[(r - 1) * SWEEP_ROW_POINTS].tokens);
        start = r;
    }
    printf("\n");
}

static int sweep_family(bench_device *d, const bench_shape *s, const int32_t *tokens, int32_t token_count,
                        const shape_run_plan *plan, sweep_results *out) {
    char family[48];
    snprintf(family, sizeof(family), "e%d-k%d-bm%d%s%s", (int)s->experts, (int)s->top_k, (int)s->block_m,
             s->shared ? "-shared" : "", bench_flavour_get(s->flavour)->suffix);
    const int32_t first = out->count;
    for (int32_t t = 0; t < token_count; ++t) {
        for (int32_t i = 0; i < SWEEP_ROW_POINTS; ++i) {
            sweep_point *p = append_point(out);
            if (p == NULL) {
                fprintf(stderr, BENCH_PROG ": out of host memory\n");
                return -1;
            }
            snprintf(p->family, sizeof(p->family), "%s", family);
            p->experts = s->experts;
            p->top_k = s->top_k;
            p->block_m = s->block_m;
            p->shared = s->shared;
            p->flavour = s->flavour;
            p->tokens = tokens[t];
            p->forced = kForced[i];
            TRY(measure_point(d, plan, p));
        }
        if (t == 0) print_family_header(family, &out->points[first]);
        print_row(&out->points[out->count - SWEEP_ROW_POINTS]);
    }
    print_best_runs(&out->points[first], token_count);
    return 0;
}

int run_sweep(bench_device *d, const bench_shape *shapes, const bool *selected, int32_t n, const int32_t *tokens,
              int32_t token_count, const shape_run_plan *plan, sweep_results *out) {
    memset(out, 0, sizeof(*out));
    for (int32_t i = 0; i < n; ++i) {
        if (!selected[i]) continue;
        bool seen = false;
        for (int32_t j = 0; j < i && !seen; ++j) seen = selected[j] && same_family(&shapes[i], &shapes[j]);
        if (!seen) TRY(sweep_family(d, &shapes[i], tokens, token_count, plan, out));
    }
    return 0;
}

void sweep_free(sweep_results *r) {
    free(r->points);
    memset(r, 0, sizeof(*r));
}
