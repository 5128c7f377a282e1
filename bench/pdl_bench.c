#include "pdl_bench.h"

#include <string.h>

#include "bench_check.h"
#include "floor_kernels.h"
#include "graph_replay.h"
#include "bench_fixture.h"

/* A decode step, a mid-size batch and a prefill chunk: one per specialization. */
static const char *const kPdlShapes[] = {"e512-m1-k10-bm8", "e512-m128-k10-bm8", "e512-m4096-k10-bm64"};

bool pdl_measures(const bench_shape *s) {
    for (size_t i = 0; i < sizeof(kPdlShapes) / sizeof(kPdlShapes[0]); ++i)
        if (strcmp(s->name, kPdlShapes[i]) == 0) return true;
    return false;
}

typedef struct pair_ctx {
    const route_fixture *f;
    int32_t producer_ctas;
    uint64_t seed;
} pair_ctx;

static int issue_producer(void *ctx, cudaStream_t s) {
    const pair_ctx *p = ctx;
    CUDA_TRY(launch_producer(s, p->producer_ctas, p->f->logits, fixture_logits_count(p->f), p->seed));
    return 0;
}

static int issue_pair(void *ctx, cudaStream_t s) {
    TRY(issue_producer(ctx, s));
    return issue_route((void *)((const pair_ctx *)ctx)->f, s);
}

/* The router must see what the producer wrote, not what the buffer held
 * before: the logits are first filled with other values, then the pair
 * runs once without a host synchronization between its kernels. */
static int verify_pair(bench_device *d, route_fixture *f, pair_ctx *p, const char *label) {
    TRY(bench_fixture_fill_logits(f, p->seed ^ 0x5bd1e995u));
    return verify_route(f, d, issue_pair, p, label);
}

static int measure_mode(bench_device *d, const bench_shape *s, const shape_run_plan *plan, bool dependent,
                        pdl_result *out) {
    const fixture_spec spec = {s->experts, s->tokens, s->top_k, s->block_m, s->shared,
                               dependent ? ALPHAMOE_FLAG_PDL : 0u, ALPHAMOE_SPECIALIZATION_AUTO, 0};
    char label[96];
    snprintf(label, sizeof(label), "%s producer + router %s PDL", s->name, dependent ? "with" : "without");
    route_fixture f;
    alphamoe_selection selection;
    pair_ctx p = {NULL, d->sm_count, plan->seed};
    int rc = bench_fixture_create(&f, &spec, d, &selection);
    p.f = &f;
    if (rc == 0) rc = verify_pair(d, &f, &p, label);
    const workload pair = {label, issue_pair, &p, 2, 0, METRIC_SPAN};
    round_stats *stats = dependent ? &out->dependent : &out->serial;
    if (rc == 0) rc = measure_cold(d, &pair, &plan->sampling, stats);
    double *graph = dependent ? &out->graph_dependent_us : &out->graph_serial_us;
    if (rc == 0 && graph_per_call(d, issue_pair, &p, GRAPH_CALLS, plan->graph_replays, graph) != 0) {
        /* A graph that cannot hold this pair is a finding, not a wrong
         * result: reported as n/a. A failure on the device would be sticky
         * and stop the next step anyway. */
        fprintf(stderr, BENCH_PROG ": %s: no graph replay figure (see above)\n", label);
        *graph = GRAPH_NOT_MEASURED;
        cudaGetLastError(); /* clears a non-sticky error */
    }
    if (rc == 0 && !dependent) {
        const workload producer = {"PDL producer alone", issue_producer, &p, 1, 0, METRIC_KERNEL_SUM};
        rc = measure_cold(d, &producer, &plan->sampling, &out->producer);
    }
    fixture_destroy(&f);
    return rc;
}

int bench_pdl_pair(bench_device *d, const bench_shape *s, const shape_run_plan *plan, pdl_result *out) {
    memset(out, 0, sizeof(*out));
    out->shape = s;
    if (measure_mode(d, s, plan, false, out) != 0 || measure_mode(d, s, plan, true, out) != 0) {
        fprintf(stderr, BENCH_PROG ": dependent-launch pair on %s failed\n", s->name);
        return -1;
    }
    return 0;
}
