#include "route_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_check.h"
#include "output_set.h"

/* What the header promises between alphamoe_route and alphamoe_route_host. */
#define WEIGHT_TOLERANCE 4e-6
/* A byte pattern no output element holds by chance in every byte. */
#define POISON_BYTE 0xA5

/* The fixture's device outputs as a set; the optional ones it does not
 * request stay NULL. */
static output_set device_outputs(const route_fixture *f) {
    const alphamoe_buffers *b = &f->buffers;
    const output_set d = {b->topk_ids, b->topk_weights, b->sorted_token_ids, b->expert_ids,
                          b->num_tokens_post_padded, b->expert_counts, b->expert_offsets};
    return d;
}

static int poison_device(const route_fixture *f, cudaStream_t s) {
    output_set dev = device_outputs(f);
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(&dev, &f->sizes, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i)
        if (*slots[i].ptr) CUDA_TRY(cudaMemsetAsync(*slots[i].ptr, POISON_BYTE, slots[i].bytes, s));
    return 0;
}

/* The device outputs into gpu, the device logits into logits. */
static int download(const route_fixture *f, output_set *gpu, void *logits) {
    output_set dev = device_outputs(f);
    buffer_slot from[OUTPUT_COUNT], to[OUTPUT_COUNT];
    output_slots(&dev, &f->sizes, from);
    output_slots(gpu, &f->sizes, to);
    for (int i = 0; i < OUTPUT_COUNT; ++i)
        if (*from[i].ptr) CUDA_TRY(cudaMemcpy(*to[i].ptr, *from[i].ptr, to[i].bytes, cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(logits, f->logits, (size_t)fixture_logits_bytes(f), cudaMemcpyDeviceToHost));
    return 0;
}

static int reference(const route_fixture *f, const void *logits, output_set *r) {
    const alphamoe_buffers b = buffers_for(r, &f->sizes, NULL, 0, f->host_bias, f->host_map);
    ROUTER_TRY(alphamoe_route_host(f->router, f->spec.tokens, logits, &b));
    return 0;
}

static int64_t first_difference(const int32_t *a, const int32_t *b, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return i;
    return -1;
}

/* Returns 0 when equal; else prints the first difference. */
static int compare(const route_fixture *f, const output_set *gpu, const output_set *ref, const char *label) {
    const int64_t pairs = (int64_t)f->spec.tokens * f->spec.top_k;
    const int64_t live = *ref->num_tokens_post_padded;
    if (*gpu->num_tokens_post_padded != live) {
        fprintf(stderr, BENCH_PROG ": %s: GPU result differs from alphamoe_route_host: num_tokens_post_padded = %d, "
                        "reference %lld\n", label, (int)*gpu->num_tokens_post_padded, (long long)live);
        return -1;
    }
    const struct {
        const char *name;
        const int32_t *got, *want;
        int64_t n;
    } fields[] = {
        {"topk_ids", gpu->topk_ids, ref->topk_ids, pairs},
        {"sorted_token_ids", gpu->sorted_token_ids, ref->sorted_token_ids, live},
        {"expert_ids", gpu->expert_ids, ref->expert_ids, live / f->spec.block_m},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); ++i) {
        const int64_t at = first_difference(fields[i].got, fields[i].want, fields[i].n);
        if (at >= 0) {
            fprintf(stderr, BENCH_PROG ": %s: GPU result differs from alphamoe_route_host: %s[%lld] = %d, reference %d\n",
                    label, fields[i].name, (long long)at, (int)fields[i].got[at], (int)fields[i].want[at]);
            return -1;
        }
    }
    for (int64_t i = 0; i < pairs; ++i) {
        const double d = fabs((double)gpu->topk_weights[i] - (double)ref->topk_weights[i]);
        if (!(d <= WEIGHT_TOLERANCE)) { /* a NaN fails too */
            fprintf(stderr, BENCH_PROG ": %s: GPU result differs from alphamoe_route_host: topk_weights[%lld] = %.9g, "
                            "reference %.9g (allowed difference %.0e)\n",
                    label, (long long)i, (double)gpu->topk_weights[i], (double)ref->topk_weights[i], WEIGHT_TOLERANCE);
            return -1;
        }
    }
    return 0;
}

int verify_route(const route_fixture *f, bench_device *d, issue_fn issue, void *ctx, const char *label) {
    output_set gpu, ref;
    memset(&gpu, 0, sizeof(gpu));
    memset(&ref, 0, sizeof(ref));
    void *logits = malloc(alloc_bytes(fixture_logits_bytes(f)));
    int rc = logits ? 0 : -1;
    if (rc != 0) fprintf(stderr, BENCH_PROG ": out of host memory for the reference check\n");
    if (rc == 0) rc = host_outputs_alloc(&gpu, &f->sizes, BENCH_PROG);
    if (rc == 0) rc = host_outputs_alloc(&ref, &f->sizes, BENCH_PROG);
    if (rc == 0) rc = poison_device(f, d->stream);
    if (rc == 0) rc = issue(ctx, d->stream);
    if (rc == 0 && cudaStreamSynchronize(d->stream) != cudaSuccess) {
        fprintf(stderr, BENCH_PROG ": %s: the checked call failed on the device\n", label);
        rc = -1;
    }
    if (rc == 0) rc = download(f, &gpu, logits);
    if (rc == 0) rc = reference(f, logits, &ref);
    if (rc == 0) rc = compare(f, &gpu, &ref, label);
    host_outputs_free(&gpu);
    host_outputs_free(&ref);
    free(logits);
    return rc;
}
