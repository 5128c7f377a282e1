#include "route_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* What the header promises between alphamoe_route and alphamoe_route_host. */
#define WEIGHT_TOLERANCE 4e-6
/* A byte pattern no output element holds by chance in every byte. */
#define POISON_BYTE 0xA5

double weight_tolerance(const alphamoe_params *p) {
    const double scale = p->routed_scaling_factor;
    return WEIGHT_TOLERANCE * (scale > 1.0 ? scale : 1.0);
}

/* Index of the first difference, or -1. */
static int64_t first_difference(const int32_t *a, const int32_t *b, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return i;
    return -1;
}

static bool ids_and_plan_equal(const alphamoe_params *p, const alphamoe_sizes *z, int32_t tokens,
                               const output_set *want, const output_set *got, route_diff *d) {
    const int64_t pairs = (int64_t)tokens * p->top_k;
    const int64_t L = p->local_expert_count; /* the plan's experts */
    const bool tail = (p->flags & ALPHAMOE_FLAG_TAIL_FILL) != 0 && pairs > 0;
    const int64_t live = *want->num_tokens_post_padded;
    const struct {
        const char *name;
        const int32_t *want, *got;
        int64_t n;
    } fields[] = {
        {"num_tokens_post_padded", want->num_tokens_post_padded, got->num_tokens_post_padded, 1},
        {"topk_ids", want->topk_ids, got->topk_ids, pairs},
        {"sorted_token_ids", want->sorted_token_ids, got->sorted_token_ids, tail ? z->sorted_token_ids.elements : live},
        {"expert_ids", want->expert_ids, got->expert_ids, tail ? z->expert_ids.elements : live / p->block_m},
        {"expert_counts", want->expert_counts, got->expert_counts, pairs > 0 ? L : 0},
        {"expert_offsets", want->expert_offsets, got->expert_offsets, pairs > 0 ? L + 1 : 0},
        {"pair_to_sorted", want->pair_to_sorted, got->pair_to_sorted, pairs},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); ++i) {
        if (fields[i].want == NULL || fields[i].got == NULL) continue;
        const int64_t at = first_difference(fields[i].want, fields[i].got, fields[i].n);
        if (at >= 0) {
            snprintf(d->first, sizeof(d->first), "%s[%lld] = %d, reference %d", fields[i].name, (long long)at,
                     (int)fields[i].got[at], (int)fields[i].want[at]);
            return false;
        }
    }
    return true;
}

void route_compare(const alphamoe_params *p, const alphamoe_sizes *z, int32_t tokens, const output_set *want,
                   const output_set *got, route_diff *d) {
    memset(d, 0, sizeof(*d));
    d->weight_tolerance = weight_tolerance(p);
    d->ids_equal = ids_and_plan_equal(p, z, tokens, want, got, d);
    d->weights_equal = true;
    const int64_t pairs = (int64_t)tokens * p->top_k;
    for (int64_t i = 0; i < pairs; ++i) {
        const double diff = fabs((double)got->topk_weights[i] - (double)want->topk_weights[i]);
        if (!(diff <= d->max_weight_diff)) d->max_weight_diff = diff; /* a NaN sticks */
        if (d->weights_equal && !(diff <= d->weight_tolerance)) { /* a NaN fails too */
            d->weights_equal = false;
            if (d->ids_equal)
                snprintf(d->first, sizeof(d->first),
                         "topk_weights[%lld] = %.9g, reference %.9g (allowed difference %.2g)", (long long)i,
                         (double)got->topk_weights[i], (double)want->topk_weights[i], d->weight_tolerance);
        }
    }
}

static int run_and_reference(const route_fixture *f, cudaStream_t stream, issue_fn issue, void *ctx, output_set *got,
                             output_set *want, void *logits) {
    const output_set dev = outputs_of(&f->buffers);
    CUDA_TRY(device_outputs_poison(&dev, &f->sizes, 0, POISON_BYTE, stream));
    TRY(issue(ctx, stream));
    CUDA_TRY(cudaStreamSynchronize(stream));
    CUDA_TRY(outputs_copy(got, &dev, &f->sizes, 0, cudaMemcpyDeviceToHost, stream));
    CUDA_TRY(cudaMemcpy(logits, f->logits, (size_t)fixture_logits_bytes(f), cudaMemcpyDeviceToHost));
    const alphamoe_buffers b = fixture_host_buffers(f, want);
    ROUTER_TRY(alphamoe_route_host(f->router, f->tokens, logits, &b));
    return 0;
}

int fixture_check(const route_fixture *f, cudaStream_t stream, issue_fn issue, void *ctx, output_set *got,
                  output_set *want, route_diff *d) {
    void *logits = malloc(alloc_bytes(fixture_logits_bytes(f)));
    if (logits == NULL) {
        fprintf(stderr, "%s: out of host memory for the reference check\n", tool_prog);
        return -1;
    }
    const int rc = run_and_reference(f, stream, issue, ctx, got, want, logits);
    if (rc == 0) route_compare(&f->params, &f->sizes, f->tokens, want, got, d);
    free(logits);
    return rc;
}
