#include "route_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_check.h"

/* What the header promises between alphamoe_route and alphamoe_route_host. */
#define WEIGHT_TOLERANCE 4e-6
/* A byte pattern no output element holds by chance in every byte. */
#define POISON_BYTE 0xA5

/* Host copies of the outputs the benchmark requests. */
typedef struct host_outputs {
    int32_t *topk_ids;
    float *topk_weights;
    int32_t *sorted_token_ids;
    int32_t *expert_ids;
    int32_t *num_tokens_post_padded;
    void *logits; /* the fixture's logits type */
} host_outputs;

static size_t host_bytes(int64_t bytes) { return bytes > 4 ? (size_t)bytes : 4; }

static int host_outputs_alloc(host_outputs *h, const route_fixture *f) {
    const alphamoe_sizes *z = &f->sizes;
    h->topk_ids = malloc(host_bytes(z->topk_ids.bytes));
    h->topk_weights = malloc(host_bytes(z->topk_weights.bytes));
    h->sorted_token_ids = malloc(host_bytes(z->sorted_token_ids.bytes));
    h->expert_ids = malloc(host_bytes(z->expert_ids.bytes));
    h->num_tokens_post_padded = malloc(host_bytes(z->num_tokens_post_padded.bytes));
    h->logits = malloc(host_bytes(fixture_logits_bytes(f)));
    if (h->topk_ids && h->topk_weights && h->sorted_token_ids && h->expert_ids && h->num_tokens_post_padded &&
        h->logits)
        return 0;
    fprintf(stderr, BENCH_PROG ": out of host memory for the reference check\n");
    return -1;
}

static void host_outputs_free(host_outputs *h) {
    free(h->topk_ids);
    free(h->topk_weights);
    free(h->sorted_token_ids);
    free(h->expert_ids);
    free(h->num_tokens_post_padded);
    free(h->logits);
    memset(h, 0, sizeof(*h));
}

static int poison_device(const route_fixture *f, cudaStream_t s) {
    const alphamoe_buffers *b = &f->buffers;
    const alphamoe_sizes *z = &f->sizes;
    CUDA_TRY(cudaMemsetAsync(b->topk_ids, POISON_BYTE, host_bytes(z->topk_ids.bytes), s));
    CUDA_TRY(cudaMemsetAsync(b->topk_weights, POISON_BYTE, host_bytes(z->topk_weights.bytes), s));
    CUDA_TRY(cudaMemsetAsync(b->sorted_token_ids, POISON_BYTE, host_bytes(z->sorted_token_ids.bytes), s));
    CUDA_TRY(cudaMemsetAsync(b->expert_ids, POISON_BYTE, host_bytes(z->expert_ids.bytes), s));
    CUDA_TRY(cudaMemsetAsync(b->num_tokens_post_padded, POISON_BYTE, host_bytes(z->num_tokens_post_padded.bytes), s));
    return 0;
}

static int download(const route_fixture *f, host_outputs *h) {
    const alphamoe_buffers *b = &f->buffers;
    const alphamoe_sizes *z = &f->sizes;
    CUDA_TRY(cudaMemcpy(h->topk_ids, b->topk_ids, host_bytes(z->topk_ids.bytes), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(h->topk_weights, b->topk_weights, host_bytes(z->topk_weights.bytes), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(h->sorted_token_ids, b->sorted_token_ids, host_bytes(z->sorted_token_ids.bytes),
                        cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(h->expert_ids, b->expert_ids, host_bytes(z->expert_ids.bytes), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(h->num_tokens_post_padded, b->num_tokens_post_padded,
                        host_bytes(z->num_tokens_post_padded.bytes), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(h->logits, f->logits, (size_t)fixture_logits_bytes(f), cudaMemcpyDeviceToHost));
    return 0;
}

static int reference(const route_fixture *f, const void *logits, host_outputs *r) {
    alphamoe_buffers b;
    memset(&b, 0, sizeof(b));
    b.struct_size = sizeof(b);
    b.topk_ids = r->topk_ids;
    b.topk_weights = r->topk_weights;
    b.sorted_token_ids = r->sorted_token_ids;
    b.expert_ids = r->expert_ids;
    b.num_tokens_post_padded = r->num_tokens_post_padded;
    b.sorted_token_ids_capacity = f->sizes.sorted_token_ids.elements;
    b.expert_ids_capacity = f->sizes.expert_ids.elements;
    b.correction_bias = f->host_bias;
    b.expert_map = f->host_map;
    ROUTER_TRY(alphamoe_route_host(f->router, f->spec.tokens, logits, &b));
    return 0;
}

static int64_t first_difference(const int32_t *a, const int32_t *b, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return i;
    return -1;
}

/* Returns 0 when equal; else prints the first difference. */
static int compare(const route_fixture *f, const host_outputs *gpu, const host_outputs *ref, const char *label) {
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
    host_outputs gpu, ref;
    memset(&gpu, 0, sizeof(gpu));
    memset(&ref, 0, sizeof(ref));
    int rc = host_outputs_alloc(&gpu, f);
    if (rc == 0) rc = host_outputs_alloc(&ref, f);
    if (rc == 0) rc = poison_device(f, d->stream);
    if (rc == 0) rc = issue(ctx, d->stream);
    if (rc == 0 && cudaStreamSynchronize(d->stream) != cudaSuccess) {
        fprintf(stderr, BENCH_PROG ": %s: the checked call failed on the device\n", label);
        rc = -1;
    }
    if (rc == 0) rc = download(f, &gpu);
    if (rc == 0) rc = reference(f, gpu.logits, &ref);
    if (rc == 0) rc = compare(f, &gpu, &ref, label);
    host_outputs_free(&gpu);
    host_outputs_free(&ref);
    return rc;
}
