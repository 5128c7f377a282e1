#include "route_session.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "routing_inputs.h"

void session_release(session *s) {
    if (s->typed_logits != s->logits) free(s->typed_logits);
    free(s->logits);
    free(s->bias);
    free(s->expert_map);
    alphamoe_router_destroy(s->router);
    host_outputs_free(&s->reference);
    host_outputs_free(&s->gpu);
    free(s->samples);
    memset(s, 0, sizeof(*s));
}

int64_t pair_count(const session *s) {
    return (int64_t)s->opt.tokens * s->params.top_k;
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1): 24 random bits are exactly what a float holds. */
int random_logits(session *s) {
    const size_t n = (size_t)s->opt.tokens * (size_t)s->params.num_experts;
    s->logits = malloc((n > 0 ? n : 1) * sizeof(float));
    if (s->logits == NULL) {
        fprintf(stderr, PROG ": out of host memory for %zu logits\n", n);
        return -1;
    }
    uint64_t state = s->opt.seed;
    for (size_t i = 0; i < n; ++i)
        s->logits[i] = (float)(splitmix64(&state) >> 40) * 0x1.0p-23f - 1.0f;
    return 0;
}

int load_input(session *s) {
    options *o = &s->opt;
    char err[512];
    int64_t rows = 0, cols = 0;
    if (npy_read_f32_2d(o->input, &s->logits, &rows, &cols, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    if (cols == 0) {
        fprintf(stderr, PROG ": %s: rows have no experts (shape [%" PRId64 ", 0])\n", o->input, rows);
        return 1;
    }
    if (o->experts != 0 && cols != o->experts)
        return usage_error("%s has %" PRId64 " experts per row but --experts is %" PRId32, o->input, cols,
                           o->experts);
    if (o->tokens_given && rows != o->tokens)
        return usage_error("%s has %" PRId64 " tokens but --tokens is %" PRId32, o->input, rows, o->tokens);
    o->tokens = (int32_t)rows;
    o->experts = (int32_t)cols;
    return 0;
}

int create_router(session *s) {
    const options *o = &s->opt;
    const preset *pr = o->preset;
    alphamoe_params p;
    memset(&p, 0, sizeof(p));
    p.struct_size = sizeof(p);
    p.num_experts = o->experts ? o->experts : pr->experts;
    p.top_k = o->top_k ? o->top_k : pr->top_k;
    p.block_m = o->block_m;
    p.max_tokens = o->tokens;
    p.flags = o->flags;
    p.force_specialization = o->specialization;
    p.scoring = o->scoring >= 0 ? o->scoring : pr->scoring;
    if (o->bias > 0 || (o->bias < 0 && pr->bias)) p.flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
    if (o->renormalize == 0 || (o->renormalize < 0 && !pr->renormalize)) p.flags |= ALPHAMOE_FLAG_NO_RENORMALIZE;
    p.routed_scaling_factor = o->scale_given ? o->scale : pr->scale;
    p.num_groups = o->groups >= 0 ? o->groups : pr->groups;
    p.topk_groups = o->topk_groups >= 0 ? o->topk_groups : pr->topk_groups;
    /* Groups given without the number kept: keep them all. */
    if (o->groups >= 0 && o->topk_groups < 0) p.topk_groups = 0;
    p.logits_type = o->logits_type;
    if (o->ep_range) {
        p.local_expert_begin = o->ep_begin;
        p.local_expert_count = o->ep_count;
    } else if (o->ep_map_count > 0) {
        p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_count = o->ep_map_count;
    }
    const alphamoe_status st = alphamoe_router_create(&p, &s->router);
    if (st != ALPHAMOE_OK)
        return usage_error("invalid routing parameters (E=%" PRId32 ", k=%" PRId32 ", block_m=%" PRId32
                           ", M=%" PRId32 "): %s",
                           p.num_experts, p.top_k, p.block_m, p.max_tokens, alphamoe_status_string(st));
    s->params.struct_size = sizeof(s->params);
    s->sizes.struct_size = sizeof(s->sizes);
    AMOE_CHECK(alphamoe_router_get_params(s->router, &s->params));
    AMOE_CHECK(alphamoe_router_sizes(s->router, &s->sizes));
    return 0;
}

int32_t plan_experts(const session *s) { return s->params.local_expert_count; }

int make_flavour_inputs(session *s) {
    const alphamoe_params *p = &s->params;
    const size_t n = (size_t)s->opt.tokens * (size_t)p->num_experts;
    s->logit_bytes = logits_type_size(p->logits_type);
    if (p->logits_type == ALPHAMOE_LOGITS_F32) {
        s->typed_logits = s->logits;
    } else {
        s->typed_logits = convert_logits(s->logits, n, p->logits_type);
        if (s->typed_logits == NULL) {
            fprintf(stderr, PROG ": out of host memory for %zu logits\n", n);
            return -1;
        }
    }
    s->bias = calloc((size_t)p->num_experts, sizeof(*s->bias));
    s->expert_map = calloc((size_t)p->num_experts, sizeof(*s->expert_map));
    if (s->bias == NULL || s->expert_map == NULL) {
        fprintf(stderr, PROG ": out of host memory\n");
        return -1;
    }
    if (p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) random_bias(s->opt.seed, s->bias, p->num_experts);
    if (p->flags & ALPHAMOE_FLAG_EXPERT_MAP)
        random_expert_map(s->opt.seed, s->expert_map, p->num_experts, p->local_expert_count);
    return 0;
}

int route_reference(session *s) {
    const alphamoe_buffers b = buffers_for(&s->reference, &s->sizes, NULL, 0, s->bias, s->expert_map);
    AMOE_CHECK(alphamoe_route_host(s->router, s->opt.tokens, s->typed_logits, &b));
    return 0;
}

static int compare_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void print_timing(double *samples, int32_t n, const char *what) {
    qsort(samples, (size_t)n, sizeof(double), compare_double);
    const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    printf("time:           median %.2f us, min %.2f us over %" PRId32 " calls\n", median, samples[0], n);
    printf("                (%s)\n", what);
}
