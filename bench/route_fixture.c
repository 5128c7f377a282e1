#include "route_fixture.h"

#include <stdlib.h>
#include <string.h>

#include "bench_check.h"
#include "bench_flavours.h"
#include "output_set.h"
#include "routing_inputs.h"

int64_t fixture_logits_count(const route_fixture *f) { return (int64_t)f->spec.tokens * f->spec.experts; }

int64_t fixture_logits_bytes(const route_fixture *f) {
    const int64_t element = f->params.logits_type == ALPHAMOE_LOGITS_F32 ? 4 : 2;
    return fixture_logits_count(f) * element;
}

static int create_router(route_fixture *f, const fixture_spec *spec) {
    alphamoe_params p;
    memset(&p, 0, sizeof(p));
    p.struct_size = sizeof(p);
    p.num_experts = spec->experts;
    p.top_k = spec->top_k;
    p.block_m = spec->block_m;
    p.max_tokens = spec->tokens;
    p.flags = (spec->shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u) | spec->extra_flags;
    p.force_specialization = spec->force;
    const bench_flavour *fl = bench_flavour_get(spec->flavour);
    p.scoring = fl->scoring;
    p.logits_type = fl->logits_type;
    p.num_groups = fl->num_groups;
    p.topk_groups = fl->topk_groups;
    p.routed_scaling_factor = fl->routed_scaling_factor;
    p.flags |= fl->flags;
    if (fl->local_experts > 0) {
        p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_count = fl->local_experts;
    }
    ROUTER_TRY(alphamoe_router_create(&p, &f->router));
    f->params.struct_size = sizeof(f->params);
    f->sizes.struct_size = sizeof(f->sizes);
    ROUTER_TRY(alphamoe_router_get_params(f->router, &f->params));
    ROUTER_TRY(alphamoe_router_sizes(f->router, &f->sizes));
    return 0;
}

/* In the arena in a fixed order, the logits first: every build of the
 * benchmark reads a shape's logits from the same addresses. */
#define ARENA_TRY(ptr, a, bytes, what)                                       \
    do {                                                                     \
        if (((ptr) = arena_take((a), (bytes), (what))) == NULL) return -1; \
    } while (0)

static int allocate_buffers(route_fixture *f, device_arena *a) {
    const alphamoe_sizes *z = &f->sizes;
    alphamoe_buffers *b = &f->buffers;
    memset(b, 0, sizeof(*b));
    b->struct_size = sizeof(*b);
    ARENA_TRY(f->logits, a, alloc_bytes(fixture_logits_bytes(f)), "the logits");
    ARENA_TRY(b->topk_ids, a, alloc_bytes(z->topk_ids.bytes), "topk_ids");
    ARENA_TRY(b->topk_weights, a, alloc_bytes(z->topk_weights.bytes), "topk_weights");
    ARENA_TRY(b->sorted_token_ids, a, alloc_bytes(z->sorted_token_ids.bytes), "sorted_token_ids");
    ARENA_TRY(b->expert_ids, a, alloc_bytes(z->expert_ids.bytes), "expert_ids");
    ARENA_TRY(b->num_tokens_post_padded, a, alloc_bytes(z->num_tokens_post_padded.bytes), "num_tokens_post_padded");
    b->sorted_token_ids_capacity = z->sorted_token_ids.elements;
    b->expert_ids_capacity = z->expert_ids.elements;
    b->workspace_bytes = alloc_bytes(z->workspace.bytes);
    /* The arena's 4 KiB alignment covers the workspace's. */
    ARENA_TRY(b->workspace, a, b->workspace_bytes, "the workspace");
    CUDA_TRY(cudaMemset(b->workspace, 0, b->workspace_bytes)); /* once, as the contract asks */
    return 0;
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The correction bias and the expert map a flavour needs, on both sides:
 * a small random bias in [-0.1, 0.1); every (E / L)-th expert local. */
static int make_flavour_inputs(route_fixture *f, device_arena *a) {
    const int32_t E = f->spec.experts;
    alphamoe_buffers *b = &f->buffers;
    if (f->params.flags & ALPHAMOE_FLAG_CORRECTION_BIAS) {
        f->host_bias = malloc((size_t)E * sizeof(float));
        if (f->host_bias == NULL) return -1;
        uint64_t state = 0x5eed;
        for (int32_t e = 0; e < E; ++e)
            f->host_bias[e] = ((float)(splitmix64(&state) >> 40) * 0x1.0p-24f - 0.5f) * 0.2f;
        float *bias = NULL;
        ARENA_TRY(bias, a, (size_t)E * sizeof(float), "the correction bias");
        b->correction_bias = bias;
        CUDA_TRY(cudaMemcpy((void *)b->correction_bias, f->host_bias, (size_t)E * sizeof(float), cudaMemcpyHostToDevice));
    }
    if (f->params.flags & ALPHAMOE_FLAG_EXPERT_MAP) {
        const int32_t L = f->params.local_expert_count;
        const int32_t stride = E / L;
        f->host_map = malloc((size_t)E * sizeof(int32_t));
        if (f->host_map == NULL) return -1;
        for (int32_t e = 0; e < E; ++e) f->host_map[e] = e % stride == 0 && e / stride < L ? e / stride : -1;
        int32_t *map = NULL;
        ARENA_TRY(map, a, (size_t)E * sizeof(int32_t), "the expert map");
        b->expert_map = map;
        CUDA_TRY(cudaMemcpy((void *)b->expert_map, f->host_map, (size_t)E * sizeof(int32_t), cudaMemcpyHostToDevice));
    }
    return 0;
}

int fixture_create(route_fixture *f, const fixture_spec *spec, bench_device *d) {
    memset(f, 0, sizeof(*f));
    if (arena_in_use(&d->arena)) {
        fprintf(stderr, BENCH_PROG ": a route fixture already holds the device arena\n");
        return -1;
    }
    f->spec = *spec;
    f->arena = &d->arena;
    TRY(create_router(f, spec));
    f->selection.struct_size = sizeof(f->selection);
    ROUTER_TRY(alphamoe_router_select(f->router, spec->tokens, &d->attributes, &f->selection));
    TRY(allocate_buffers(f, &d->arena));
    TRY(make_flavour_inputs(f, &d->arena));
    CUDA_TRY(cudaDeviceSynchronize()); /* the workspace zeroing is done */
    return 0;
}

void fixture_destroy(route_fixture *f) {
    /* Teardown failures cannot change a figure any more: ignored. */
    if (f->arena) arena_release_all(f->arena);
    alphamoe_router_destroy(f->router);
    free(f->host_bias);
    free(f->host_map);
    memset(f, 0, sizeof(*f));
}

int fixture_fill_logits(route_fixture *f, uint64_t seed) {
    const int64_t n = fixture_logits_count(f);
    float *host = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (host == NULL) {
        fprintf(stderr, BENCH_PROG ": out of host memory for %lld logits\n", (long long)n);
        return -1;
    }
    uint64_t state = seed;
    /* 24 random bits are exactly what a float holds. */
    for (int64_t i = 0; i < n; ++i) host[i] = (float)(splitmix64(&state) >> 40) * 0x1.0p-23f - 1.0f;
    /* bf16 and fp16: the same values rounded to nearest even. */
    void *typed = host;
    if (f->params.logits_type != ALPHAMOE_LOGITS_F32) {
        typed = convert_logits(host, (size_t)n, f->params.logits_type);
        free(host);
        if (typed == NULL) {
            fprintf(stderr, BENCH_PROG ": out of host memory for %lld logits\n", (long long)n);
            return -1;
        }
    }
    const cudaError_t e = cudaMemcpy(f->logits, typed, (size_t)fixture_logits_bytes(f), cudaMemcpyHostToDevice);
    free(typed);
    CUDA_TRY(e);
    /* From pageable memory cudaMemcpy may return before the copy lands. */
    CUDA_TRY(cudaDeviceSynchronize());
    return 0;
}

int issue_route(void *ctx, cudaStream_t stream) {
    const route_fixture *f = ctx;
    ROUTER_TRY(alphamoe_route(f->router, f->spec.tokens, f->logits, &f->buffers, stream));
    return 0;
}
