#include "shape_bench.h"

#include <stdio.h>
#include <string.h>

#include "bench_check.h"
#include "floor_kernels.h"
#include "graph_replay.h"
#include "bench_fixture.h"

static void choose_floor(const floor_figures *floors, const bench_shape *s, const alphamoe_selection *sel,
                         shape_result *r) {
    r->bandwidth_floor_us = bandwidth_floor_us(floors, shape_logits_bytes(s));
    /* Every call reads at least one row and stores what depends on it. */
    r->floor_name = "row";
    r->floor_us = floors->one_row.median_us;
    /* A CTA of FLOOR_FEW_ROWS tokens or more reads at least that many rows,
     * and waits for them all (rows at least as wide as the floor's). */
    const int64_t row_bytes = shape_logits_bytes(s) / s->tokens;
    if (sel->tokens_per_cta >= FLOOR_FEW_ROWS && row_bytes >= FLOOR_ROW_FLOATS * (int64_t)sizeof(float) &&
        floors->few_rows.median_us > r->floor_us) {
        r->floor_name = "rows";
        r->floor_us = floors->few_rows.median_us;
    }
    /* large crosses grid barriers, and so does small above 8 CTAs (up to
     * 8 its grid is one cluster: alphamoe/router.h). */
    const bool grid_barrier = sel->specialization == ALPHAMOE_SPECIALIZATION_LARGE ||
                              (sel->specialization == ALPHAMOE_SPECIALIZATION_SMALL && sel->grid_ctas > 8);
    if (grid_barrier && floors->barrier.median_us > r->floor_us) {
        r->floor_name = "barrier";
        r->floor_us = floors->barrier.median_us;
    }
    if (r->bandwidth_floor_us > r->floor_us) {
        r->floor_name = "bandwidth";
        r->floor_us = r->bandwidth_floor_us;
    }
    r->ratio = r->floor_us > 0.0 ? r->kernel.median_us / r->floor_us : 0.0;
}

static void judge(const bench_shape *s, shape_result *r) {
    switch (s->target) {
    case TARGET_MICROSECONDS: r->target_us = s->target_value; break;
    case TARGET_BANDWIDTH_RATIO: r->target_us = s->target_value * r->bandwidth_floor_us; break;
    default: r->target_us = 0.0; break;
    }
    if (r->target_us > 0.0) r->time_check = r->kernel.median_us <= r->target_us ? CHECK_PASS : CHECK_MISS;
    r->graph_check =
        r->graph_per_call_us <= r->kernel.median_us + GRAPH_OVERHEAD_LIMIT_US ? CHECK_PASS : CHECK_MISS;
}

int bench_one_shape(bench_device *d, const bench_shape *s, const floor_figures *floors, const shape_run_plan *plan,
                    shape_result *out) {
    memset(out, 0, sizeof(*out));
    out->shape = s;
    const fixture_spec spec = {s->experts, s->tokens, s->top_k, s->block_m, s->shared, 0u,
                               ALPHAMOE_SPECIALIZATION_AUTO, s->flavour};
    route_fixture f;
    int rc = bench_fixture_create(&f, &spec, d, &out->selection);
    if (rc == 0) rc = bench_fixture_fill_logits(&f, plan->seed);
    if (rc == 0) rc = verify_route(&f, d, issue_route, &f, s->name);
    const workload w = {s->name, issue_route, &f, 1, 0, METRIC_KERNEL_SUM};
    if (rc == 0) rc = measure_cold(d, &w, &plan->sampling, &out->kernel);
    if (rc == 0) rc = graph_per_call(d, issue_route, &f, GRAPH_CALLS, plan->graph_replays, &out->graph_per_call_us);
    if (rc == 0 && plan->with_cold_code) {
        d->evict_code = true;
        rc = measure_cold(d, &w, &plan->sampling, &out->cold_code);
        d->evict_code = false;
        out->have_cold_code = rc == 0;
    }
    fixture_destroy(&f);
    if (rc != 0) {
        fprintf(stderr, BENCH_PROG ": shape %s failed\n", s->name);
        return -1;
    }
    choose_floor(floors, s, &out->selection, out);
    judge(s, out);
    return 0;
}

/* The twin has the same flavour too: e512-m1-k10-bm8-bf16 is not the twin
 * of e512-m1-k10-bm8-shared. */
static bool same_routed_shape(const bench_shape *a, const bench_shape *b) {
    return a->experts == b->experts && a->tokens == b->tokens && a->top_k == b->top_k && a->block_m == b->block_m &&
           a->flavour == b->flavour;
}

void judge_shared_mode(shape_result *results, int32_t n) {
    for (int32_t i = 0; i < n; ++i) {
        shape_result *r = &results[i];
        if (!r->shape->shared) continue;
        for (int32_t j = 0; j < n; ++j) {
            const shape_result *t = &results[j];
            if (t->shape->shared || !same_routed_shape(r->shape, t->shape)) continue;
            r->routed_us = t->kernel.median_us;
            r->shared_check = r->kernel.median_us <= (1.0 + SHARED_OVERHEAD_LIMIT) * t->kernel.median_us
                                  ? CHECK_PASS
                                  : CHECK_MISS;
        }
    }
}

void format_shape_target(const shape_result *r, char *buf, size_t size) {
    format_target(r->shape, buf, size);
    const size_t used = strlen(buf);
    if (r->shape->target == TARGET_BANDWIDTH_RATIO) snprintf(buf + used, size - used, "=%.1f", r->target_us);
}

const char *spec_name(int32_t specialization) {
    const char *name = alphamoe_specialization_name((alphamoe_specialization)specialization);
    return name ? name : "?";
}

void format_verdict(const shape_result *r, char *buf, size_t size) {
    const struct {
        check_state state;
        const char *name;
    } checks[] = {{r->time_check, "time"}, {r->graph_check, "graph"}, {r->shared_check, "shared"}};
    bool any = false;
    char missed[64] = "";
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); ++i) {
        if (checks[i].state == CHECK_NONE) continue;
        any = true;
        if (checks[i].state == CHECK_MISS) {
            if (missed[0]) strncat(missed, ",", sizeof(missed) - strlen(missed) - 1);
            strncat(missed, checks[i].name, sizeof(missed) - strlen(missed) - 1);
        }
    }
    if (!any) snprintf(buf, size, "-");
    else if (missed[0]) snprintf(buf, size, "miss(%s)", missed);
    else snprintf(buf, size, "pass");
}
