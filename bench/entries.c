#include "entries.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_check.h"
#include "bench_fixture.h"
#include "bench_flavours.h"
#include "cold_sampler.h"

/* The grid beyond the benchmark shapes: a row width each (E), every
 * specialization and the large kernel's plans (M: a token a warp at most
 * in a CTA, pairs too few to stage, enough to), the plain softmax over fp32
 * and bf16, two flavours (a sigmoid with a bias; a softmax without
 * renormalization, which takes the shared expert), the routings of
 * DeepSeek-V3 and Qwen2-MoE over bf16 and DeepSeek-V4-Pro's over fp32 and
 * bf16, in both expert modes where the routing allows: so that every entry
 * point is timed where it is chosen. */
static const int32_t kGridExperts[] = {8, 60, 128, 256, 384, 512};
static const int32_t kGridTokens[] = {1, 8, 64, 1024, 4096, 16384};
static const int32_t kGridFlavours[] = {FLAVOUR_DEFAULT,          FLAVOUR_BF16,          FLAVOUR_KIMI_K2,
                                        FLAVOUR_QWEN2_MOE,        FLAVOUR_DEEPSEEK_V3_BF16,
                                        FLAVOUR_QWEN2_MOE_BF16,   FLAVOUR_DEEPSEEK_V4_PRO,
                                        FLAVOUR_DEEPSEEK_V4_PRO_BF16};

typedef struct planned_call {
    route_fixture *f;
    alphamoe_selection plan;
} planned_call;

static int issue_planned(void *ctx, cudaStream_t stream) {
    planned_call *c = ctx;
    const alphamoe_status s = alphamoe_route_with_plan(c->f->router, c->f->tokens, c->f->logits, &c->f->buffers,
                                                       &c->plan, (struct CUstream_st *)stream);
    if (s != ALPHAMOE_OK) {
        fprintf(stderr, BENCH_PROG ": alphamoe_route_with_plan: %s\n", alphamoe_status_string(s));
        return -1;
    }
    return 0;
}

static entry_time *append_time(entry_results *r) {
    if (r->count == r->capacity) {
        const int32_t capacity = r->capacity ? 2 * r->capacity : 512;
        entry_time *grown = realloc(r->points, (size_t)capacity * sizeof(*grown));
        if (grown == NULL) return NULL;
        r->points = grown;
        r->capacity = capacity;
    }
    entry_time *t = &r->points[r->count++];
    memset(t, 0, sizeof(*t));
    return t;
}

/* Whether the spec's router exists: not every routing takes the shared
 * expert, nor every E DeepSeek-V3's groups. */
static bool valid_spec(const fixture_spec *spec) {
    const alphamoe_params p = bench_fixture_params(spec);
    alphamoe_router *r = NULL;
    if (alphamoe_router_create(&p, &r) != ALPHAMOE_OK) return false;
    alphamoe_router_destroy(r);
    return true;
}

static int time_shape(bench_device *d, const fixture_spec *spec, const char *name, const shape_run_plan *plan,
                      entry_results *out) {
    if (!valid_spec(spec)) return 0;
    route_fixture f;
    alphamoe_selection chosen;
    TRY(bench_fixture_create(&f, spec, d, &chosen));
    int rc = bench_fixture_fill_logits(&f, plan->seed);
    alphamoe_selection plans[256];
    int32_t n = 0;
    for (int i = 0; i < (int)(sizeof(plans) / sizeof(plans[0])); ++i) {
        memset(&plans[i], 0, sizeof(plans[i]));
        plans[i].struct_size = sizeof(plans[i]);
    }
    if (rc == 0) {
        const alphamoe_status s = alphamoe_router_candidates(f.router, spec->tokens, &d->attributes, plans,
                                                             (int32_t)(sizeof(plans) / sizeof(plans[0])), &n);
        if (s != ALPHAMOE_OK) {
            fprintf(stderr, BENCH_PROG ": %s: alphamoe_router_candidates: %s\n", name, alphamoe_status_string(s));
            rc = -1;
        }
    }
    for (int32_t i = 0; rc == 0 && i < n; ++i) {
        char label[160];
        snprintf(label, sizeof(label), "%s %s", name, alphamoe_entry_point_name(plans[i].entry_point_index));
        planned_call call = {&f, plans[i]};
        rc = verify_route(&f, d, issue_planned, &call, label);
        entry_time *t = rc == 0 ? append_time(out) : NULL;
        if (rc == 0 && t == NULL) rc = -1;
        if (rc != 0) break;
        snprintf(t->shape, sizeof(t->shape), "%s", name);
        t->entry = plans[i].entry_point_index;
        t->chosen = i == 0;
        const workload w = {label, issue_planned, &call, 1, 0, METRIC_KERNEL_SUM};
        rc = measure_cold(d, &w, &plan->sampling, &t->kernel);
        if (rc == 0)
            printf("  %-40s %-48s %7.2f%s\n", name, alphamoe_entry_point_name(t->entry), t->kernel.median_us,
                   t->chosen ? "  (chosen)" : "");
    }
    fflush(stdout);
    fixture_destroy(&f);
    if (rc != 0) fprintf(stderr, BENCH_PROG ": entry points of %s failed\n", name);
    return rc;
}

static fixture_spec spec_of(const bench_shape *s) {
    const fixture_spec spec = {s->experts, s->tokens, s->top_k, s->block_m, s->shared, 0u,
                               ALPHAMOE_SPECIALIZATION_AUTO, s->flavour};
    return spec;
}

int run_entries(bench_device *d, const bench_shape *shapes, const bool *selected, int32_t n,
                const shape_run_plan *plan, entry_results *out) {
    memset(out, 0, sizeof(*out));
    printf("\nentry points: median CUPTI kernel time, L2 evicted, us (%d rounds x %d samples)\n",
           (int)plan->sampling.rounds, (int)plan->sampling.samples);
    for (int32_t i = 0; i < n; ++i) {
        if (!selected[i]) continue;
        const fixture_spec spec = spec_of(&shapes[i]);
        TRY(time_shape(d, &spec, shapes[i].name, plan, out));
    }
    for (size_t e = 0; e < sizeof(kGridExperts) / sizeof(kGridExperts[0]); ++e)
        for (size_t t = 0; t < sizeof(kGridTokens) / sizeof(kGridTokens[0]); ++t)
            for (size_t fl = 0; fl < sizeof(kGridFlavours) / sizeof(kGridFlavours[0]); ++fl)
                for (int shared = 0; shared < 2; ++shared) {
                    const int32_t E = kGridExperts[e];
                    const fixture_spec spec = {E, kGridTokens[t], E < 8 ? E : (E == 8 ? 2 : 8), 16, shared != 0, 0u,
                                               ALPHAMOE_SPECIALIZATION_AUTO, kGridFlavours[fl]};
                    char name[64];
                    snprintf(name, sizeof(name), "grid e%d-m%d-k%d-bm16%s%s", (int)E, (int)spec.tokens,
                             (int)spec.top_k, shared ? "-shared" : "", bench_flavour_get(spec.flavour)->suffix);
                    TRY(time_shape(d, &spec, name, plan, out));
                }
    return 0;
}

double entry_best_margin(const entry_results *r, int32_t entry, const char **shape) {
    double best = -1e30;
    *shape = NULL;
    for (int32_t i = 0; i < r->count;) {
        int32_t end = i + 1;
        while (end < r->count && !r->points[end].chosen) ++end;
        const entry_time *chosen = &r->points[i];
        if (chosen->chosen && chosen->entry == entry) {
            double other = INFINITY; /* no other plan runs the call */
            for (int32_t j = i + 1; j < end; ++j)
                if (r->points[j].kernel.median_us < other) other = r->points[j].kernel.median_us;
            const double margin = other - chosen->kernel.median_us;
            if (margin > best) {
                best = margin;
                *shape = chosen->shape;
            }
        }
        i = end;
    }
    return best;
}

void print_entries(const entry_results *r) {
    printf("\nentry points: best margin where chosen (the best other plan's time less its own, us); "
           "earns its place at >= %.2f\n", ENTRY_WIN_MARGIN_US);
    int32_t earning = 0;
    for (int32_t e = 0; e < alphamoe_entry_point_count(); ++e) {
        const char *shape = NULL;
        const double margin = entry_best_margin(r, e, &shape);
        const bool earns = shape != NULL && margin >= ENTRY_WIN_MARGIN_US;
        earning += earns;
        if (shape == NULL)
            printf("  %-48s chosen on no shape measured\n", alphamoe_entry_point_name(e));
        else if (isinf(margin))
            printf("  %-48s the only plan of %s\n", alphamoe_entry_point_name(e), shape);
        else
            printf("  %-48s %+6.2f at %s%s\n", alphamoe_entry_point_name(e), margin, shape, earns ? "" : "  (does not earn)");
    }
    printf("%d of %d entry points earn their place\n", (int)earning, (int)alphamoe_entry_point_count());
}

void entries_free(entry_results *r) {
    free(r->points);
    memset(r, 0, sizeof(*r));
}
