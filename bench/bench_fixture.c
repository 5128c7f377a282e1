#include "bench_fixture.h"

#include <stdlib.h>
#include <string.h>

#include "bench_check.h"
#include "bench_flavours.h"
#include "random_inputs.h"
#include "route_check.h"

static void flavour_inputs(route_fixture *f) {
    const int32_t E = f->params.num_experts;
    fixture_fill_inputs(f, 0x5eed);
    if (f->host_map) {
        const int32_t L = f->params.local_expert_count, stride = E / L;
        for (int32_t e = 0; e < E; ++e) f->host_map[e] = e % stride == 0 && e / stride < L ? e / stride : -1;
    }
}

alphamoe_params bench_fixture_params(const fixture_spec *spec) {
    alphamoe_params p;
    memset(&p, 0, sizeof(p));
    p.struct_size = sizeof(p);
    p.num_experts = spec->experts;
    p.top_k = spec->top_k;
    p.block_m = spec->block_m;
    p.max_tokens = spec->tokens;
    p.flags = (spec->shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u) | spec->extra_flags;
    p.force_specialization = spec->force;
    bench_flavour_params(spec->flavour, &p);
    return p;
}

int bench_fixture_create(route_fixture *f, const fixture_spec *spec, bench_device *d, alphamoe_selection *sel) {
    const alphamoe_params p = bench_fixture_params(spec);
    ROUTER_TRY(fixture_router(f, &p, spec->tokens));
    memset(sel, 0, sizeof(*sel));
    sel->struct_size = sizeof(*sel);
    ROUTER_TRY(alphamoe_router_select(f->router, spec->tokens, &d->attributes, sel));
    flavour_inputs(f);
    return fixture_alloc(f, &d->arena, 0);
}

int bench_fixture_fill_logits(route_fixture *f, uint64_t seed) {
    const int64_t n = fixture_logits_count(f);
    float *values = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    void *typed = NULL;
    if (values) {
        uniform_logits(seed, values, (size_t)n);
        const int32_t type = f->params.logits_type;
        typed = type == ALPHAMOE_LOGITS_F32 ? values : convert_logits(values, (size_t)n, type);
    }
    if (typed == NULL) {
        fprintf(stderr, BENCH_PROG ": out of host memory for %lld logits\n", (long long)n);
        free(values);
        return -1;
    }
    const int rc = fixture_upload_logits(f, typed);
    if (typed != values) free(typed);
    free(values);
    return rc;
}

int verify_route(const route_fixture *f, bench_device *d, issue_fn issue, void *ctx, const char *label) {
    output_set got, want;
    memset(&got, 0, sizeof(got));
    memset(&want, 0, sizeof(want));
    route_diff diff;
    int rc = fixture_host_outputs(f, &got);
    if (rc == 0) rc = fixture_host_outputs(f, &want);
    if (rc == 0) rc = fixture_check(f, d->stream, issue, ctx, &got, &want, &diff);
    if (rc == 0 && !(diff.ids_equal && diff.weights_equal)) {
        fprintf(stderr, BENCH_PROG ": %s: GPU result differs from alphamoe_route_host: %s\n", label, diff.first);
        rc = -1;
    }
    host_outputs_free(&got);
    host_outputs_free(&want);
    return rc;
}
