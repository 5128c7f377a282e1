/* The routing flavours on the GPU against the host reference: no
 * renormalization, scaling factors, sigmoid and sqrt-softplus scoring with
 * and without a correction bias, grouped top-k, expert parallelism by range and by map,
 * bf16 and fp16 logits, hash routing (token ids and table entries outside
 * their ranges among them), redundant experts (replica counts and physical
 * ids outside theirs, the load), and the model presets that combine them. Ids and
 * plan bitwise, weights within the contract's tolerance, nothing written
 * outside what the contract says; the three specializations bitwise equal
 * to each other; non-finite logits and biases. In suite soak, random
 * flavours for ALPHAMOE_SOAK_SECONDS (soak_flavours_differential).
 *
 * Flavours the kernels do not implement yet: the library refuses them
 * with ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR, and alphamoe_router_select says
 * so before any launch (flavour_supported_on_gpu below asks it). For such
 * a case this suite checks the refusal itself (alphamoe_route returns that
 * status and writes no byte) and counts the case as not run. A test case
 * with any refused case ends SKIPPED (exit 77, the counts on its output),
 * never passed; as soon as the library claims a flavour, every case of it
 * runs and must equal the host reference. Each case runs as its own meson
 * test (argv[1] names it); without a CUDA device every case exits 77. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_plan.h"
#include "flavour_inputs.h"
#include "flavour_reference.h"
#include "gpu_test.h"
#include "logits_types.h"
#include "presets.h"
#include "soak.h"
#include "test_support.h"

/* Cases of the current test case that ran on the GPU, and that the
 * library refused as flavours its kernels do not implement; and the
 * refusals over the whole run, which decide the exit status. */
static int g_ran, g_refused, g_refused_total;

/* ------------------------------------------------------------ flavours */

enum { EP_NONE, EP_RANGE, EP_MAP, EP_MAP_SHARED_IDS };
enum { GROUPS_AUTO = -1 }; /* a divisor of E up to 8, half of them kept */

typedef struct flavour {
    const char *name; /* NULL: the model's */
    const model_preset *model; /* a model's router: E, k and the flavour below come from the tools' presets */
    int32_t E, k; /* 0: from the shape grid */
    uint32_t flags; /* among NO_RENORMALIZE, CORRECTION_BIAS and REDUNDANT_EXPERTS (replica_shape) */
    int32_t scoring, logits_type, groups, topk_groups;
    float scale;
    int ep; /* EP_RANGE: the middle half of the experts; EP_MAP: a random half, junk values elsewhere;
               EP_MAP_SHARED_IDS: E / 4 local ids, each of several experts */
    int32_t vocab; /* > 0: hash routing over a table of this many token ids (fill_hash_inputs) */
} flavour;

#define NO_RENORM ALPHAMOE_FLAG_NO_RENORMALIZE
#define BIAS ALPHAMOE_FLAG_CORRECTION_BIAS
#define REPLICAS ALPHAMOE_FLAG_REDUNDANT_EXPERTS
#define SMX ALPHAMOE_SCORING_SOFTMAX
#define SIG ALPHAMOE_SCORING_SIGMOID
#define SSP ALPHAMOE_SCORING_SQRT_SOFTPLUS
#define F32 ALPHAMOE_LOGITS_F32
#define BF16 ALPHAMOE_LOGITS_BF16
#define F16 ALPHAMOE_LOGITS_F16

#define MODEL(id) NULL, &kModelPresets[PRESET_##id]

/* The model rows are filled from their presets when the program starts
 * (take_model_presets): their logits type and expert parallelism are the
 * row's own. */
static flavour kFlavours[] = {
    {MODEL(QWEN2_MOE), .logits_type = F32, .ep = EP_NONE},
    {"softmax, no renormalization", NULL, 0, 0, NO_RENORM, SMX, F32, 0, 0, 0.0f, EP_NONE, 0},
    {"softmax, scaled", NULL, 0, 0, 0, SMX, F32, 0, 0, 2.5f, EP_NONE, 0},
    {"sigmoid, renormalized", NULL, 0, 0, 0, SIG, F32, 0, 0, 0.0f, EP_NONE, 0},
    {MODEL(LLAMA4), .logits_type = F32, .ep = EP_NONE},
    {"sigmoid with correction bias", NULL, 0, 0, BIAS, SIG, F32, 0, 0, 0.0f, EP_NONE, 0},
    {MODEL(DEEPSEEK_V3), .logits_type = F32, .ep = EP_NONE},
    {MODEL(KIMI_K2), .logits_type = F32, .ep = EP_NONE},
    {MODEL(GLM_45), .logits_type = F32, .ep = EP_NONE},
    {"softmax, grouped", NULL, 0, 0, 0, SMX, F32, GROUPS_AUTO, 0, 0.0f, EP_NONE, 0},
    {"sigmoid, grouped, no bias", NULL, 0, 0, 0, SIG, F32, GROUPS_AUTO, 0, 0.0f, EP_NONE, 0},
    {"sigmoid, bias, grouped, no renormalization", NULL, 0, 0, BIAS | NO_RENORM, SIG, F32, GROUPS_AUTO, 0, 1.5f,
     EP_NONE, 0},
    {"bf16 logits", NULL, 0, 0, 0, SMX, BF16, 0, 0, 0.0f, EP_NONE, 0},
    {"fp16 logits", NULL, 0, 0, 0, SMX, F16, 0, 0, 0.0f, EP_NONE, 0},
    {"expert parallelism, local range", NULL, 0, 0, 0, SMX, F32, 0, 0, 0.0f, EP_RANGE, 0},
    {"expert parallelism, expert map", NULL, 0, 0, 0, SMX, F32, 0, 0, 0.0f, EP_MAP, 0},
    {"deepseek-v3 on bf16 with an expert map", &kModelPresets[PRESET_DEEPSEEK_V3], .logits_type = BF16, .ep = EP_MAP},
    {"expert parallelism, a map giving several experts one local id", NULL, 0, 0, 0, SMX, F32, 0, 0, 0.0f,
     EP_MAP_SHARED_IDS, 0},
    /* 16 groups of 32: at one token the CTA ranks the first (16 maxima of
     * 16 experts in the kept groups, k = 10); the second keeps too few
     * (6 maxima) and hands the token to warp 0. */
    {"sigmoid, bias, 16 groups of 32 keep 8", NULL, 512, 10, BIAS, SIG, F32, 16, 8, 1.0f, EP_NONE, 0},
    {"sigmoid, bias, 16 groups of 32 keep 3", NULL, 512, 10, BIAS, SIG, F32, 16, 3, 1.0f, EP_NONE, 0},
    {"sigmoid, fp16, local range, scaled", NULL, 0, 0, NO_RENORM, SIG, F16, 0, 0, 0.5f, EP_RANGE, 0},
    {MODEL(DEEPSEEK_V4_FLASH), .logits_type = F32, .ep = EP_NONE},
    {MODEL(DEEPSEEK_V4_PRO), .logits_type = F32, .ep = EP_NONE},
    {"deepseek-v4-pro on bf16 with an expert map", &kModelPresets[PRESET_DEEPSEEK_V4_PRO], .logits_type = BF16,
     .ep = EP_MAP},
    {"sqrt-softplus, renormalized", NULL, 0, 0, 0, SSP, F32, 0, 0, 0.0f, EP_NONE, 0},
    {"sqrt-softplus, no renormalization, scaled", NULL, 0, 0, NO_RENORM, SSP, F32, 0, 0, 2.5f, EP_NONE, 0},
    {"sqrt-softplus with correction bias, no renormalization", NULL, 0, 0, BIAS | NO_RENORM, SSP, F32, 0, 0, 0.0f,
     EP_NONE, 0},
    {"sqrt-softplus, bias, grouped, fp16", NULL, 0, 0, BIAS, SSP, F16, GROUPS_AUTO, 0, 1.5f, EP_NONE, 0},
    /* Rows and top-k past the narrow kernels': the wide kernels. */
    {MODEL(KIMI_K3), .logits_type = F32, .ep = EP_NONE},
    {"2048 experts top-32, sigmoid, bias, bf16, expert map", NULL, 2048, 32, BIAS, SIG, BF16, 0, 0, 2.5f, EP_MAP, 0},
    {"1000 experts top-20, softmax, no renormalization, local range", NULL, 1000, 20, NO_RENORM, SMX, F32, 0, 0,
     0.0f, EP_RANGE, 0},
    {"600 experts top-17, sqrt-softplus, bias, fp16, shared local ids", NULL, 600, 17, BIAS, SSP, F16, 0, 0, 1.5f,
     EP_MAP_SHARED_IDS, 0},
    {"300 experts top-24, sigmoid, no renormalization", NULL, 300, 24, NO_RENORM, SIG, F32, 0, 0, 0.0f, EP_NONE, 0},
    {"1024 experts top-24, sigmoid, bias, 32 groups keep 6", NULL, 1024, 24, BIAS, SIG, F32, 32, 6, 2.5f, EP_NONE, 0},
    {"2048 experts top-32, sqrt-softplus, bias, bf16, 8 groups keep 3, expert map", NULL, 2048, 32, BIAS, SSP, BF16, 8,
     3, 1.5f, EP_MAP, 0},
    {"deepseek-v3's groups at top-20", NULL, 256, 20, BIAS, SIG, F32, 8, 4, 2.5f, EP_NONE, 0},
    {"softmax, 3 groups of 300 keep 2, top-17", NULL, 900, 17, 0, SMX, F32, 3, 2, 0.0f, EP_RANGE, 0},
    /* Redundant experts: the wide kernels at every E and k. */
    {"redundant experts, sigmoid, bias, groups", NULL, 0, 0, REPLICAS | BIAS, SIG, F32, GROUPS_AUTO, 0, 2.5f, EP_NONE,
     0},
    {"redundant experts, softmax, bf16, local range", NULL, 0, 0, REPLICAS, SMX, BF16, 0, 0, 0.0f, EP_RANGE, 0},
    {"redundant experts, sqrt-softplus, expert map, hashed", NULL, 0, 0, REPLICAS, SSP, F32, 0, 0, 1.5f, EP_MAP, 500},
    {"redundant experts, 2048 top-32, sigmoid, fp16, shared local ids", NULL, 2048, 32, REPLICAS | NO_RENORM, SIG,
     F16, 0, 0, 0.0f, EP_MAP_SHARED_IDS, 0},
    /* Hash routing: the wide kernels at every E and k. */
    {MODEL(DEEPSEEK_V4_HASH), .logits_type = F32, .ep = EP_NONE},
    {"hash routing, softmax", NULL, 0, 0, 0, SMX, F32, 0, 0, 0.0f, EP_NONE, 1000},
    {"hash routing, softmax, no renormalization, bf16, expert map", NULL, 0, 0, NO_RENORM, SMX, BF16, 0, 0, 0.0f,
     EP_MAP, 300},
    {"hash routing, sigmoid, local range, scaled", NULL, 0, 0, 0, SIG, F32, 0, 0, 2.5f, EP_RANGE, 5000},
    {"hash routing, sqrt-softplus, fp16, shared local ids", NULL, 0, 0, 0, SSP, F16, 0, 0, 1.5f, EP_MAP_SHARED_IDS,
     7},
    {"hash routing, 2048 experts top-32, sigmoid, no renormalization", NULL, 2048, 32, NO_RENORM, SIG, F32, 0, 0,
     0.0f, EP_NONE, 777},
};

static void take_model_presets(void) {
    for (int i = 0; i < COUNT(kFlavours); ++i) {
        flavour *f = &kFlavours[i];
        const model_preset *m = f->model;
        if (m == NULL) continue;
        if (f->name == NULL) f->name = m->note;
        f->E = m->experts;
        f->k = m->top_k;
        f->flags = m->flags;
        f->scoring = m->scoring;
        f->groups = m->groups;
        f->topk_groups = m->topk_groups;
        f->scale = m->scale;
        f->vocab = m->vocab;
    }
}

/* One routing call's shape and inputs. */
typedef struct route_case {
    const flavour *f;
    int32_t E, k, block_m, M, max_tokens;
    uint32_t extra_flags; /* TAIL_FILL, SHARED_EXPERT */
    int32_t force;
    logit_pattern pattern;
    bias_pattern bias;
    int with_optional;
} route_case;

static void describe(const route_case *c, char *out, size_t n) {
    snprintf(out, n, "flavour \"%s\": E=%d k=%d block_m=%d M=%d max_tokens=%d flags+=0x%x force=%d logits=%s bias=%s "
             "optional=%d", c->f->name, c->E, c->k, c->block_m, c->M, c->max_tokens, c->extra_flags, c->force,
             logit_pattern_name(c->pattern), bias_pattern_name(c->bias), c->with_optional);
}

/* Redundant experts' shape for E logical experts: P physical ones (an
 * eighth more, at most 2048), at most R = 3 replicas each. */
static void replica_shape(int32_t E, int32_t *P, int32_t *R) {
    *P = E + E / 8 + 1 < 2048 ? E + E / 8 + 1 : 2048;
    *R = *P < 3 ? *P : 3;
}

static int32_t auto_groups(int32_t E) {
    for (int32_t g = 8; g > 1; --g)
        if (E % g == 0) return g;
    return 1;
}

static alphamoe_params case_params(const route_case *c) {
    const flavour *f = c->f;
    alphamoe_params p = test_params(c->E, c->k, c->block_m, c->max_tokens > c->M ? c->max_tokens : c->M,
                                    f->flags | c->extra_flags);
    p.force_specialization = c->force;
    if (f->vocab > 0) { /* hash routing takes no shared expert */
        p.flags = (p.flags & ~(uint32_t)ALPHAMOE_FLAG_SHARED_EXPERT) | ALPHAMOE_FLAG_HASH_ROUTING;
        p.vocab_size = f->vocab;
    }
    p.scoring = f->scoring;
    p.logits_type = f->logits_type;
    p.routed_scaling_factor = f->scale;
    if (f->groups == GROUPS_AUTO) {
        p.num_groups = auto_groups(c->E);
        const int32_t size = c->E / p.num_groups;
        p.topk_groups = p.num_groups / 2 > 0 ? p.num_groups / 2 : 1;
        while ((int64_t)p.topk_groups * size < c->k) ++p.topk_groups;
    } else {
        p.num_groups = f->groups;
        p.topk_groups = f->topk_groups;
    }
    if (f->flags & REPLICAS) replica_shape(c->E, &p.num_physical_experts, &p.replica_slots);
    const int32_t routed = plan_routed_experts(&p); /* the range and the map are over these */
    if (f->ep == EP_RANGE) {
        p.local_expert_count = routed / 2 > 0 ? routed / 2 : 1;
        p.local_expert_begin = (routed - p.local_expert_count) / 2;
    } else if (f->ep == EP_MAP) {
        p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_count = routed / 2 > 0 ? routed / 2 : 1;
    } else if (f->ep == EP_MAP_SHARED_IDS) {
        p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_count = routed / 4 > 0 ? routed / 4 : 1;
    }
    return p;
}

/* The library's attributes of the current device. */
static alphamoe_device_attributes current_device_attributes(void) {
    int device = 0;
    CUDA_OK(cudaGetDevice(&device));
    alphamoe_device_attributes attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    ROUTE_OK(alphamoe_device_attributes_query(device, &attrs));
    return attrs;
}

/* Whether the library runs this router on the current device: its own
 * answer, from the pure selection function. */
static int flavour_supported_on_gpu(const alphamoe_router *router, int32_t M) {
    const alphamoe_device_attributes attrs = current_device_attributes();
    alphamoe_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.struct_size = sizeof sel;
    const alphamoe_status st = alphamoe_router_select(router, M, &attrs, &sel);
    if (st == ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR) return 0;
    ROUTE_OK(st);
    return 1;
}

/* Host and device copies of one case's inputs, and the host reference. */
typedef struct case_inputs {
    alphamoe_router *router;
    void *logits;   /* host, typed */
    float *values;  /* host, what the router sees */
    float *bias;
    int32_t *map;
    int32_t *token_ids, *table; /* hash routing's, [M] and [vocab, k] */
    int32_t *replicas, *replica_count, *load; /* redundant experts', [E, R], [E], [P] */
    void *device_logits;
    float *device_bias;
    int32_t *device_map;
    int32_t *device_token_ids, *device_table;
    int32_t *device_replicas, *device_replica_count, *device_load;
    int32_t *load_before; /* [P]: the load both sides start from */
    int32_t routed;       /* E, or P with redundant experts */
    host_plan expected; /* alphamoe_route_host */
} case_inputs;

static void inputs_make(case_inputs *in, const route_case *c, test_rng *rng) {
    char desc[384];
    describe(c, desc, sizeof desc);
    const alphamoe_params p = case_params(c);
    in->router = NULL;
    const alphamoe_status st = alphamoe_router_create(&p, &in->router);
    if (st != ALPHAMOE_OK) fail_msg("%s: create: %s", desc, alphamoe_status_string(st));
    const int32_t rows = c->M > 0 ? c->M : 1;
    const int64_t n = (int64_t)rows * c->E;
    in->values = malloc((size_t)n * sizeof(float));
    assert_non_null(in->values);
    in->logits = fill_typed_logits(rng, p.logits_type, in->values, rows, c->E, c->E, c->pattern,
                                   (int32_t)rng_below(rng, (uint32_t)c->E));
    assert_non_null(in->logits);
    const int32_t routed = plan_routed_experts(&p);
    in->routed = routed;
    in->bias = malloc((size_t)c->E * sizeof *in->bias);
    in->map = malloc((size_t)routed * sizeof *in->map);
    assert_true(in->bias && in->map);
    fill_bias(rng, in->bias, c->E, c->bias);
    if (c->f->ep == EP_MAP_SHARED_IDS)
        fill_expert_map_with_shared_ids(rng, in->map, routed, p.local_expert_count);
    else
        fill_expert_map(rng, in->map, routed, p.local_expert_count > 0 ? p.local_expert_count : routed, 1);
    in->device_logits = device_copy(in->logits, (size_t)n * logits_type_bytes(p.logits_type));
    in->device_bias = device_copy(in->bias, (size_t)c->E * sizeof(float));
    in->device_map = device_copy(in->map, (size_t)routed * sizeof(int32_t));
    const int32_t vocab = p.vocab_size > 0 ? p.vocab_size : 1;
    in->token_ids = malloc((size_t)rows * sizeof *in->token_ids);
    in->table = malloc((size_t)vocab * (size_t)c->k * sizeof *in->table);
    assert_true(in->token_ids && in->table);
    fill_hash_inputs(rng, in->token_ids, rows, in->table, vocab, c->k, c->E);
    in->device_token_ids = device_copy(in->token_ids, (size_t)rows * sizeof(int32_t));
    in->device_table = device_copy(in->table, (size_t)vocab * (size_t)c->k * sizeof(int32_t));
    const int32_t R = p.replica_slots > 0 ? p.replica_slots : 1;
    in->replicas = malloc((size_t)c->E * (size_t)R * sizeof *in->replicas);
    in->replica_count = malloc((size_t)c->E * sizeof *in->replica_count);
    in->load = malloc((size_t)routed * sizeof *in->load);
    in->load_before = malloc((size_t)routed * sizeof *in->load_before);
    assert_true(in->replicas && in->replica_count && in->load && in->load_before);
    fill_replica_tables(rng, in->replicas, in->replica_count, c->E, R, routed);
    for (int32_t q = 0; q < routed; ++q) in->load_before[q] = in->load[q] = (int32_t)rng_below(rng, 1000000);
    in->device_replicas = device_copy(in->replicas, (size_t)c->E * (size_t)R * sizeof(int32_t));
    in->device_replica_count = device_copy(in->replica_count, (size_t)c->E * sizeof(int32_t));
    in->device_load = device_copy(in->load, (size_t)routed * sizeof(int32_t));

    assert_int_equal(host_plan_alloc(&in->expected, in->router, c->with_optional), 0);
    in->expected.buffers.correction_bias = in->bias;
    in->expected.buffers.expert_map = in->map;
    in->expected.buffers.token_ids = in->token_ids;
    in->expected.buffers.hash_table = in->table;
    in->expected.buffers.logical_to_physical = in->replicas;
    in->expected.buffers.replica_count = in->replica_count;
    in->expected.buffers.physical_load = in->load;
    host_plan_poison(&in->expected);
    ROUTE_OK(alphamoe_route_host(in->router, c->M, in->logits, &in->expected.buffers));
    char why[512];
    if (validate_plan(&in->expected, c->M, why, sizeof why)) fail_msg("%s: host reference invalid: %s", desc, why);
}

static void inputs_free(case_inputs *in) {
    host_plan_free(&in->expected);
    CUDA_OK(cudaFree(in->device_logits));
    CUDA_OK(cudaFree(in->device_bias));
    CUDA_OK(cudaFree(in->device_map));
    CUDA_OK(cudaFree(in->device_token_ids));
    CUDA_OK(cudaFree(in->device_table));
    CUDA_OK(cudaFree(in->device_replicas));
    CUDA_OK(cudaFree(in->device_replica_count));
    CUDA_OK(cudaFree(in->device_load));
    free(in->token_ids);
    free(in->table);
    free(in->replicas);
    free(in->replica_count);
    free(in->load);
    free(in->load_before);
    free(in->logits);
    free(in->values);
    free(in->bias);
    free(in->map);
    alphamoe_router_destroy(in->router);
}

static void plan_attach_inputs(device_plan *d, const case_inputs *in) {
    d->buffers.correction_bias = in->device_bias;
    d->buffers.expert_map = in->device_map;
    d->buffers.token_ids = in->device_token_ids;
    d->buffers.hash_table = in->device_table;
    d->buffers.logical_to_physical = in->device_replicas;
    d->buffers.replica_count = in->device_replica_count;
    d->buffers.physical_load = in->device_load;
    /* Each call counts into the load: every call starts from the same. */
    CUDA_OK(cudaMemcpy(in->device_load, in->load_before, (size_t)in->routed * sizeof(int32_t), cudaMemcpyHostToDevice));
    d->mirror.buffers.expert_map = in->map; /* for validate_plan on the readback */
}

/* Every array of the readback still holds the poison: nothing written. */
static void expect_unwritten(const device_plan *d, const char *desc) {
    const host_plan *m = &d->mirror;
    const alphamoe_sizes *z = &m->sizes;
    const struct {
        const void *data;
        int64_t n;
        const char *name;
    } arrays[] = {{m->topk_ids, z->topk_ids.elements, "topk_ids"},
                  {m->topk_weights, z->topk_weights.elements, "topk_weights"},
                  {m->sorted_token_ids, z->sorted_token_ids.elements, "sorted_token_ids"},
                  {m->expert_ids, z->expert_ids.elements, "expert_ids"},
                  {m->num_tokens_post_padded, 1, "num_tokens_post_padded"},
                  {m->expert_counts, z->expert_counts.elements, "expert_counts"},
                  {m->expert_offsets, z->expert_offsets.elements, "expert_offsets"},
                  {m->pair_to_sorted, z->pair_to_sorted.elements, "pair_to_sorted"}};
    for (int a = 0; a < COUNT(arrays); ++a) {
        if (!arrays[a].data) continue;
        const uint32_t *w = arrays[a].data;
        const uint32_t poison = a == 1 ? TEST_POISON_F32_BITS : (uint32_t)TEST_POISON_I32;
        for (int64_t i = 0; i < arrays[a].n + TEST_GUARD; ++i)
            if (w[i] != poison) fail_msg("%s: refused call wrote %s[%" PRId64 "]", desc, arrays[a].name, i);
    }
}

/* Routes the case on the GPU into d (poisoned first). Returns 1 when it
 * ran; 0 when the library refused the flavour, after checking that the
 * refusal is what the contract says. */
static int route_or_refuse(const case_inputs *in, const route_case *c, device_plan *d, const alphamoe_router *router) {
    char desc[384];
    describe(c, desc, sizeof desc);
    const int supported = flavour_supported_on_gpu(router, c->M);
    plan_attach_inputs(d, in);
    device_plan_poison(d, 0);
    const alphamoe_status st =
        alphamoe_route(router, c->M, c->M > 0 ? in->device_logits : NULL, &d->buffers, NULL);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    device_plan_read(d, 0);
    if (!supported) {
        if (st != ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR)
            fail_msg("%s: alphamoe_router_select refuses the flavour but alphamoe_route says %s", desc,
                     alphamoe_status_string(st));
        expect_unwritten(d, desc);
        ++g_refused;
        ++g_refused_total;
        return 0;
    }
    if (st != ALPHAMOE_OK) fail_msg("%s: alphamoe_route: %s", desc, alphamoe_status_string(st));
    /* The load: the host reference's counts over the same start (and
     * without redundant experts, the start itself). */
    int32_t *load = malloc((size_t)in->routed * sizeof *load);
    assert_non_null(load);
    CUDA_OK(cudaMemcpy(load, in->device_load, (size_t)in->routed * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (int32_t q = 0; q < in->routed; ++q)
        if (load[q] != in->load[q])
            fail_msg("%s: physical_load[%d] = %d, the host reference counts %d (from %d)", desc, q, load[q],
                     in->load[q], in->load_before[q]);
    free(load);
    ++g_ran;
    return 1;
}

/* Weights within the contract's tolerance; bit for bit where the contract
 * defines them as the shared formula's score itself (sigmoid scoring, no
 * renormalization, scale 1; sqrt-softplus without renormalization at any
 * scale, fl(score * scale)): that checks the kernels compute the formulas
 * of kernels/common/score_math.h exactly. */
static float weight_tolerance(const alphamoe_params *p) {
    const int unrenormalized = (p->flags & ALPHAMOE_FLAG_NO_RENORMALIZE) != 0;
    if (unrenormalized && ((p->scoring == ALPHAMOE_SCORING_SIGMOID && p->routed_scaling_factor == 1.0f) ||
                           p->scoring == ALPHAMOE_SCORING_SQRT_SOFTPLUS))
        return 0.0f;
    return flavour_weight_tolerance(p);
}

static void check_against(const host_plan *expected, const device_plan *d, const route_case *c, const char *what) {
    char why[512], desc[384];
    describe(c, desc, sizeof desc);
    if (compare_plans(expected, &d->mirror, c->M, weight_tolerance(&d->mirror.params), why, sizeof why))
        fail_msg("%s [%s]: %s", what, desc, why);
    if (validate_plan(&d->mirror, c->M, why, sizeof why)) fail_msg("%s [%s]: %s", what, desc, why);
}

static void run_case(const route_case *c, test_rng *rng) {
    case_inputs in;
    inputs_make(&in, c, rng);
    device_plan d;
    device_plan_alloc(&d, in.router, c->with_optional);
    if (route_or_refuse(&in, c, &d, in.router)) check_against(&in.expected, &d, c, "GPU differs from host reference");
    device_plan_free(&d);
    inputs_free(&in);
}

static void report(const char *what) {
    print_message("# %s: %d cases equal to the host reference, %d refused as not implemented by the kernels\n", what,
                  g_ran, g_refused);
}

static const int32_t kTokenCounts[] = {1, 2, 3, 7, 9, 16, 31, 64, 129, 255, 512, 1000, 4096, 16384};
static const int32_t kExpertCounts[] = {1, 2, 8, 16, 60, 64, 128, 160, 256, 257, 384, 512};
static const int32_t kTopKs[] = {1, 2, 4, 6, 8, 10, 16};
static const int32_t kBlockMs[] = {1, 3, 8, 16, 64, 256};

/* The valid k values of a flavour for E: none when groups cannot hold k. */
static int k_valid(const flavour *f, int32_t E, int32_t k) {
    if (k > E) return 0;
    route_case c = {f, E, k, 16, 1, 1, 0u, 0, LOGITS_RANDOM, BIAS_RANDOM, 0};
    const alphamoe_params p = case_params(&c);
    alphamoe_router *r = NULL;
    if (alphamoe_router_create(&p, &r) != ALPHAMOE_OK) return 0;
    alphamoe_router_destroy(r);
    return 1;
}

/* ------------------------------------------------------------ the cases */

/* Every flavour over a shape grid: its own E and k for the model presets,
 * every (E, k) pair otherwise, block_m and M cycling. */
static void gpu_flavours_grid(void **state) {
    (void)state;
    test_rng rng = case_rng(101);
    int idx = 0;
    for (int fi = 0; fi < COUNT(kFlavours); ++fi) {
        const flavour *f = &kFlavours[fi];
        for (int ei = 0; ei < COUNT(kExpertCounts); ++ei) {
            for (int ki = 0; ki < COUNT(kTopKs); ++ki) {
                const int32_t E = f->E ? f->E : kExpertCounts[ei];
                const int32_t k = f->k ? f->k : kTopKs[ki];
                if ((f->E && (ei > 0 || ki > 0)) || !k_valid(f, E, k)) continue;
                const int reps = f->E ? COUNT(kBlockMs) * 2 : 1;
                for (int r = 0; r < reps; ++r, ++idx) {
                    route_case c = {f, E, k, kBlockMs[idx % COUNT(kBlockMs)], kTokenCounts[idx % COUNT(kTokenCounts)],
                                    0, idx % 4 == 0 ? ALPHAMOE_FLAG_TAIL_FILL : 0u, 0,
                                    idx % 3 == 0 ? LOGITS_QUANTIZED : LOGITS_RANDOM,
                                    (bias_pattern)(idx % 3 == 1 ? BIAS_TIES : BIAS_RANDOM), idx % 2};
                    /* The shared expert where the flavour allows it. */
                    if (f->scoring == SMX && f->groups == 0 && k >= 2 && idx % 5 == 0)
                        c.extra_flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
                    run_case(&c, &rng);
                }
            }
        }
    }
    report("shape grid");
}

/* The library's limits (E up to 2048, k up to 32) over the grid of E and k
 * that crosses the narrow kernels' edges (512 experts, 16 chosen) and the
 * wide kernels' row widths: every flavour of no model and no fixed shape
 * in turn, block_m, M and the specialization cycling, with adversarial
 * logits every third case and shared experts where softmax allows. */
static void gpu_flavours_limits_grid(void **state) {
    (void)state;
    test_rng rng = case_rng(111);
    static const int32_t experts[] = {1, 2, 3, 255, 512, 513, 896, 1023, 1024, 2047, 2048};
    static const int32_t top_ks[] = {1, 2, 15, 16, 17, 31, 32};
    static const int32_t tokens[] = {1, 2, 9, 16, 17, 129, 300, 1000, 3000};
    int idx = 0, fi = 0;
    for (int ei = 0; ei < COUNT(experts); ++ei)
        for (int ki = 0; ki < COUNT(top_ks); ++ki) {
            const int32_t E = experts[ei], k = top_ks[ki];
            if (k > E) continue;
            for (int rep = 0; rep < 3; ++rep, ++idx) {
                const flavour *f;
                do f = &kFlavours[fi++ % COUNT(kFlavours)];
                while (f->model || f->E);
                route_case c = {f, E, k, kBlockMs[idx % COUNT(kBlockMs)], tokens[idx % COUNT(tokens)], 0,
                                idx % 4 == 0 ? ALPHAMOE_FLAG_TAIL_FILL : 0u, idx % 4,
                                idx % 3 == 2 ? (logit_pattern)(idx / 3 % LOGITS_PATTERN_COUNT) : LOGITS_RANDOM,
                                (bias_pattern)(idx % BIAS_PATTERN_COUNT), idx % 2};
                if (f->scoring == SMX && !f->groups && k >= 2 && idx % 5 == 0)
                    c.extra_flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
                run_case(&c, &rng);
            }
        }
    report("limits grid");
}

/* 1 to 16 tokens, which the tiny kernel plans by few_token_plan.cuh where
 * every expert is a plan expert (the expert-parallel flavours keep the
 * general plan): every flavour, M cycling through 1..16 with block_m, the
 * logit patterns and the options varied. */
static void gpu_flavours_few_tokens(void **state) {
    (void)state;
    test_rng rng = case_rng(106);
    int idx = 0;
    for (int fi = 0; fi < COUNT(kFlavours); ++fi) {
        const flavour *f = &kFlavours[fi];
        for (int ei = 0; ei < COUNT(kExpertCounts); ++ei) {
            const int32_t E = f->E ? f->E : kExpertCounts[ei];
            const int32_t k = f->k ? f->k : kTopKs[(ei + fi) % COUNT(kTopKs)];
            if ((f->E && ei > 0) || !k_valid(f, E, k)) continue;
            const int reps = f->E ? 16 : 2;
            for (int r = 0; r < reps; ++r, ++idx) {
                const int32_t M = 1 + idx % 16;
                route_case c = {f, E, k, kBlockMs[idx % COUNT(kBlockMs)], M, M + (int32_t)rng_below(&rng, 40),
                                idx % 2 == 0 ? ALPHAMOE_FLAG_TAIL_FILL : 0u, ALPHAMOE_SPECIALIZATION_TINY,
                                (logit_pattern)(idx % LOGITS_PATTERN_COUNT),
                                (bias_pattern)(idx % BIAS_PATTERN_COUNT), (idx / 2) % 2};
                if (f->scoring == SMX && f->groups == 0 && k >= 2 && idx % 3 == 0)
                    c.extra_flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
                run_case(&c, &rng);
            }
        }
    }
    report("one to 16 tokens");
}

/* 1 to 16 tokens of more than 128 experts: one token the tiny kernel's
 * CTA ranks (one expert a thread; groups of 32 a warp each) unless it
 * needs the general rounds, and then warp 0 alone; 2 to 16 tokens a warp
 * each. Every flavour at every such E and a few k, each logit and bias
 * pattern (ties and non-finite values take the rounds), the shared expert
 * where the flavour allows it. */
static void gpu_flavours_wide_rows_few_tokens(void **state) {
    (void)state;
    test_rng rng = case_rng(107);
    static const int32_t experts[] = {129, 160, 256, 257, 384, 512};
    static const int32_t top_ks[] = {1, 8, 10, 16};
    int idx = 0;
    for (int fi = 0; fi < COUNT(kFlavours); ++fi) {
        const flavour *f = &kFlavours[fi];
        for (int ei = 0; ei < COUNT(experts); ++ei) {
            for (int ki = 0; ki < COUNT(top_ks); ++ki) {
                const int32_t E = f->E ? f->E : experts[ei];
                const int32_t k = f->k ? f->k : top_ks[ki];
                if ((f->E && (ei > 0 || ki > 0)) || !k_valid(f, E, k)) continue;
                for (int p = 0; p < LOGITS_PATTERN_COUNT; ++p) {
                    for (int many = 0; many < 2; ++many, ++idx) {
                        const int32_t M = many ? 2 + idx % 15 : 1;
                        route_case c = {f, E, k, kBlockMs[idx % COUNT(kBlockMs)], M,
                                        M + (int32_t)rng_below(&rng, 20), idx % 2 == 0 ? ALPHAMOE_FLAG_TAIL_FILL : 0u,
                                        idx % 3 == 0 ? ALPHAMOE_SPECIALIZATION_AUTO : ALPHAMOE_SPECIALIZATION_TINY,
                                        (logit_pattern)p, (bias_pattern)(idx % BIAS_PATTERN_COUNT), (idx / 2) % 2};
                        if (f->scoring == SMX && f->groups == 0 && k >= 2 && idx % 4 >= 2)
                            c.extra_flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
                        run_case(&c, &rng);
                    }
                }
            }
        }
    }
    report("1 to 16 tokens of more than 128 experts");
}

/* 2 to 16 tokens of sigmoid or sqrt-softplus scoring over more than 128
 * experts: the small
 * kernel's grid of a token a CTA, one cluster (beyond 8 CTAs, a size past
 * the portable one), each CTA ranking its token (one expert a thread)
 * unless it needs the general rounds (ties, non-finite values), then by a
 * warp. The library chooses it (auto) or small is forced; every
 * such flavour at every such E and a few k, each logit and bias
 * pattern. */
static void gpu_flavours_token_ctas(void **state) {
    (void)state;
    test_rng rng = case_rng(108);
    static const int32_t experts[] = {129, 160, 256, 257, 384, 512};
    static const int32_t top_ks[] = {1, 8, 10, 16};
    int idx = 0;
    for (int fi = 0; fi < COUNT(kFlavours); ++fi) {
        const flavour *f = &kFlavours[fi];
        if (f->scoring == SMX) continue;
        for (int ei = 0; ei < COUNT(experts); ++ei) {
            for (int ki = 0; ki < COUNT(top_ks); ++ki) {
                const int32_t E = f->E ? f->E : experts[ei];
                const int32_t k = f->k ? f->k : top_ks[ki];
                if ((f->E && (ei > 0 || ki > 0)) || E <= 128 || !k_valid(f, E, k)) continue;
                for (int p = 0; p < LOGITS_PATTERN_COUNT; ++p, ++idx) {
                    const int32_t M = 2 + idx % 15;
                    route_case c = {f, E, k, kBlockMs[idx % COUNT(kBlockMs)], M, M + (int32_t)rng_below(&rng, 20),
                                    idx % 2 == 0 ? ALPHAMOE_FLAG_TAIL_FILL : 0u,
                                    idx % 3 == 0 ? ALPHAMOE_SPECIALIZATION_SMALL : ALPHAMOE_SPECIALIZATION_AUTO,
                                    (logit_pattern)p, (bias_pattern)(idx % BIAS_PATTERN_COUNT), (idx / 2) % 2};
                    run_case(&c, &rng);
                }
            }
        }
    }
    report("2 to 16 tokens of sigmoid or sqrt-softplus scoring over more than 128 experts, a CTA each");
}

/* Non-finite and adversarial logits and biases, through every
 * specialization. */
static void gpu_flavours_nonfinite(void **state) {
    (void)state;
    test_rng rng = case_rng(102);
    static const int32_t tokens[] = {1, 9, 300, 3000};
    int idx = 0;
    for (int fi = 0; fi < COUNT(kFlavours); ++fi) {
        const flavour *f = &kFlavours[fi];
        const int32_t E = f->E ? f->E : 257, k = f->k ? f->k : 10;
        if (!k_valid(f, E, k)) fail_msg("flavour \"%s\": E=%d k=%d invalid", f->name, E, k);
        for (int p = 0; p < LOGITS_PATTERN_COUNT; ++p)
            for (int force = 0; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force, ++idx) {
                route_case c = {f, E, k, 8, tokens[idx % COUNT(tokens)], 0, ALPHAMOE_FLAG_TAIL_FILL, force,
                                (logit_pattern)p, (bias_pattern)(idx % BIAS_PATTERN_COUNT), 1};
                run_case(&c, &rng);
            }
    }
    report("non-finite and adversarial inputs");
}

/* tiny, small and large forced on the same inputs: bitwise identical,
 * weights included, and each equal to the host reference. */
static void gpu_flavours_specializations_agree(void **state) {
    (void)state;
    test_rng rng = case_rng(103);
    static const int32_t tokens[] = {1, 16, 17, 200, 513, 5000};
    int compared = 0;
    for (int fi = 0; fi < COUNT(kFlavours); ++fi) {
        const flavour *f = &kFlavours[fi];
        const int32_t E = f->E ? f->E : 128, k = f->k ? f->k : 8;
        for (int t = 0; t < COUNT(tokens); ++t) {
            route_case c = {f, E, k, 16, tokens[t], 0, 0u, 0, t % 2 ? LOGITS_QUANTIZED : LOGITS_RANDOM,
                            (bias_pattern)(t % 2 ? BIAS_TIES : BIAS_RANDOM), 1};
            case_inputs in;
            inputs_make(&in, &c, &rng);
            device_plan d[3];
            int ran = 0;
            for (int v = 0; v < 3; ++v) {
                route_case forced = c;
                forced.force = ALPHAMOE_SPECIALIZATION_TINY + v;
                alphamoe_params p = case_params(&forced);
                alphamoe_router *router = NULL;
                ROUTE_OK(alphamoe_router_create(&p, &router));
                device_plan_alloc(&d[v], router, 1);
                if (route_or_refuse(&in, &forced, &d[v], router)) {
                    check_against(&in.expected, &d[v], &forced, "forced specialization differs from host reference");
                    ++ran;
                }
                alphamoe_router_destroy(router);
            }
            if (ran == 3) {
                const host_plan *a = &d[0].mirror;
                for (int v = 1; v < 3; ++v, ++compared) {
                    expect_plans_bitwise_equal(a, &d[v].mirror, c.M);
                }
            } else if (ran != 0) {
                fail_msg("flavour \"%s\" M=%d: %d of 3 specializations ran; the flavour check must not depend "
                         "on the specialization", f->name, c.M, ran);
            }
            for (int v = 0; v < 3; ++v) device_plan_free(&d[v]);
            inputs_free(&in);
        }
    }
    print_message("# %d specialization pairs bitwise identical\n", compared);
    report("specializations");
}

/* Every entry point that can run a call (alphamoe_router_candidates:
 * another variant, the flavoured kernel for a plain call) on
 * the same inputs: each equal to the host reference and bitwise equal to
 * the library's own choice, weights included. Over the grid below every
 * entry point of the library runs at least once. */
static void gpu_flavours_entry_points_agree(void **state) {
    (void)state;
    test_rng rng = case_rng(109);
    /* The plain softmax over fp32 and bf16 logits (the plain kernels); a
     * scaled softmax, which takes the shared expert, over fp32 and fp16
     * (the flavoured kernels' half_logits entry points); sigmoid with a
     * bias, alone and over groups of 32 (the CTA rankings, the token-CTA
     * grids); sqrt-softplus with a bias over fp32 and bf16 (its kernels);
     * an expert map; top-20, rows past 512 experts, hash routing and
     * redundant experts (the wide kernels, every row width). */
    static const flavour kinds[] = {
        {"softmax, renormalized", NULL, 0, 0, 0, SMX, F32, 0, 0, 0.0f, EP_NONE, 0},
        {"softmax over bf16", NULL, 0, 0, 0, SMX, BF16, 0, 0, 0.0f, EP_NONE, 0},
        {"softmax, scaled", NULL, 0, 0, 0, SMX, F32, 0, 0, 2.5f, EP_NONE, 0},
        {"softmax over fp16, scaled", NULL, 0, 0, 0, SMX, F16, 0, 0, 2.5f, EP_NONE, 0},
        {"sigmoid with correction bias", NULL, 0, 0, BIAS, SIG, F32, 0, 0, 2.5f, EP_NONE, 0},
        {"sigmoid with correction bias, groups of 32", NULL, 256, 8, BIAS, SIG, F32, 8, 4, 2.5f, EP_NONE, 0},
        {"sqrt-softplus with correction bias", NULL, 0, 0, BIAS, SSP, F32, 0, 0, 2.5f, EP_NONE, 0},
        {"sqrt-softplus over bf16 with correction bias", NULL, 0, 0, BIAS, SSP, BF16, 0, 0, 1.5f, EP_NONE, 0},
        {"softmax, expert map", NULL, 0, 0, 0, SMX, F32, 0, 0, 0.0f, EP_MAP, 0},
        {"softmax, scaled, top-20", NULL, 0, 20, 0, SMX, F32, 0, 0, 2.5f, EP_NONE, 0},
        {"hash routing, sqrt-softplus", NULL, 0, 0, 0, SSP, F32, 0, 0, 2.5f, EP_NONE, 1000},
        {"redundant experts, sigmoid, bias, local range", NULL, 0, 0, REPLICAS | BIAS, SIG, F32, 0, 0, 2.5f, EP_RANGE,
         0},
    };
    static const int32_t experts[] = {8, 60, 128, 256, 512, 1024, 2048};
    static const int32_t tokens[] = {1, 8, 16, 64, 4096};
    const alphamoe_device_attributes attrs = current_device_attributes();
    const int32_t entries = alphamoe_entry_point_count();
    int *ran = calloc((size_t)entries, sizeof *ran);
    assert_non_null(ran);
    int compared = 0;
    for (int fi = 0; fi < COUNT(kinds); ++fi)
        for (int e = 0; e < COUNT(experts); ++e)
            for (int t = 0; t < COUNT(tokens); ++t)
                for (int shared = 0; shared < 2; ++shared) {
                    const flavour *f = &kinds[fi];
                    const int32_t E = f->E ? f->E : experts[e];
                    const int32_t k = f->k ? f->k : (E < 8 ? E : 8);
                    if ((f->E && e > 0) || k > E) continue; /* a fixed E: once */
                    route_case c = {f, E, k, t % 2 ? 8 : 64, tokens[t], 0,
                                    shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u, 0,
                                    t % 3 ? LOGITS_RANDOM : LOGITS_QUANTIZED, BIAS_RANDOM, 1};
                    alphamoe_params p = case_params(&c);
                    alphamoe_router *probe = NULL;
                    if (alphamoe_router_create(&p, &probe) != ALPHAMOE_OK) continue; /* no shared expert here */
                    alphamoe_router_destroy(probe);
                    char desc[384];
                    describe(&c, desc, sizeof desc);
                    case_inputs in;
                    inputs_make(&in, &c, &rng);
                    alphamoe_selection plans[256];
                    for (int i = 0; i < COUNT(plans); ++i) {
                        memset(&plans[i], 0, sizeof plans[i]);
                        plans[i].struct_size = sizeof plans[i];
                    }
                    int32_t n = 0;
                    ROUTE_OK(alphamoe_router_candidates(in.router, c.M, &attrs, plans, COUNT(plans), &n));
                    assert_true(n >= 1 && n <= COUNT(plans));
                    device_plan first;
                    for (int32_t i = 0; i < n; ++i) {
                        device_plan d;
                        device_plan_alloc(&d, in.router, 1);
                        plan_attach_inputs(&d, &in);
                        device_plan_poison(&d, 0);
                        const alphamoe_status st =
                            alphamoe_route_with_plan(in.router, c.M, in.device_logits, &d.buffers, &plans[i], NULL);
                        if (st != ALPHAMOE_OK)
                            fail_msg("%s: entry point %s: %s", desc,
                                     alphamoe_entry_point_name(plans[i].entry_point_index), alphamoe_status_string(st));
                        CUDA_OK(cudaDeviceSynchronize());
                        device_plan_read(&d, 0);
                        char what[512];
                        snprintf(what, sizeof what, "%s: entry point %s differs from the host reference", desc,
                                 alphamoe_entry_point_name(plans[i].entry_point_index));
                        check_against(&in.expected, &d, &c, what);
                        ++ran[plans[i].entry_point_index];
                        if (i == 0) {
                            first = d;
                            continue;
                        }
                        expect_plans_bitwise_equal(&first.mirror, &d.mirror, c.M);
                        ++compared;
                        device_plan_free(&d);
                    }
                    device_plan_free(&first);
                    inputs_free(&in);
                }
    int never = 0;
    for (int32_t i = 0; i < entries; ++i)
        if (!ran[i]) {
            print_message("# entry point %s ran in no case\n", alphamoe_entry_point_name(i));
            ++never;
        }
    free(ran);
    print_message("# %d entry point pairs bitwise identical; %d entry points\n", compared, entries);
    assert_int_equal(never, 0);
}

/* Routers of different kernels take turns on one workspace, as the
 * contract allows: the large kernel's exchange sets and phase word, the
 * wide grids' group sums over the same sets (hash routing, redundant
 * experts; a large grid and a forced small one), the count table of a wide
 * grid over more than 512 plan experts and of a small cooperative grid.
 * Each round takes them in another order, so each call meets the phase
 * word either way; every call must equal its host reference, and the
 * workspace must end ready for the next call. */
static void gpu_flavours_shared_workspace(void **state) {
    (void)state;
    test_rng rng = case_rng(112);
    static const flavour kinds[] = {
        {"softmax, renormalized", NULL, 512, 10, 0, SMX, F32, 0, 0, 0.0f, EP_NONE, 0},
        {"hash routing, sqrt-softplus", NULL, 384, 6, 0, SSP, F32, 0, 0, 1.5f, EP_NONE, 1000},
        {"redundant experts, sigmoid, bias", NULL, 256, 8, REPLICAS | BIAS, SIG, F32, 0, 0, 2.5f, EP_NONE, 0},
        {"softmax, scaled, top-20", NULL, 1024, 20, 0, SMX, F32, 0, 0, 2.5f, EP_NONE, 0},
        {"hash routing, sqrt-softplus", NULL, 384, 6, 0, SSP, F32, 0, 0, 1.5f, EP_NONE, 1000},
        {"sigmoid with correction bias", NULL, 256, 8, BIAS, SIG, F32, 0, 0, 2.5f, EP_NONE, 0},
    };
    /* M and the forced specialization of each kind: the hash router's
     * second turn is a small grid of 38 CTAs, the sigmoid router's a small
     * cooperative grid of 64. */
    static const int32_t tokens[] = {4096, 4096, 2048, 2048, 300, 512};
    static const int32_t forced[] = {0, 0, 0, 0, ALPHAMOE_SPECIALIZATION_SMALL, ALPHAMOE_SPECIALIZATION_SMALL};
    enum { n = COUNT(kinds) };
    route_case cases[n];
    case_inputs in[n];
    device_plan d[n];
    size_t bytes = 0;
    for (int i = 0; i < n; ++i) {
        const route_case c = {&kinds[i], kinds[i].E, kinds[i].k, 64, tokens[i], 0, 0u, forced[i],
                              LOGITS_RANDOM, BIAS_RANDOM, 1};
        cases[i] = c;
        inputs_make(&in[i], &cases[i], &rng);
        device_plan_alloc(&d[i], in[i].router, 1);
        if ((size_t)d[i].mirror.sizes.workspace.bytes > bytes) bytes = (size_t)d[i].mirror.sizes.workspace.bytes;
    }
    void *shared = NULL;
    CUDA_OK(cudaMalloc(&shared, bytes));
    CUDA_OK(cudaMemset(shared, 0, bytes)); /* once, as documented */
    int calls = 0;
    static const int step[3] = {1, 5, 1}, start[3] = {0, 1, 3}; /* three orders of the six */
    for (int round = 0; round < 3; ++round) {
        for (int j = 0; j < n; ++j) {
            const int i = (start[round] + step[round] * j) % n;
            d[i].buffers.workspace = shared;
            d[i].buffers.workspace_bytes = bytes;
            if (route_or_refuse(&in[i], &cases[i], &d[i], in[i].router)) {
                check_against(&in[i].expected, &d[i], &cases[i], "GPU differs from host reference on a shared workspace");
                ++calls;
            }
        }
    }
    device_plan view = d[0];
    view.workspace = shared;
    device_plan_expect_workspace_ready(&view, "shared workspace after every router's calls");
    CUDA_OK(cudaFree(shared));
    for (int i = 0; i < n; ++i) {
        device_plan_free(&d[i]);
        inputs_free(&in[i]);
    }
    print_message("# %d calls of %d routers on one workspace\n", calls, n);
    report("routers sharing a workspace");
}

/* Plans sized for more tokens than the call routes, optional outputs off
 * and on, tail fill off and on: with expert parallelism the tail runs to
 * the capacity sized for the local experts. */
static void gpu_flavours_optional_outputs_and_tail(void **state) {
    (void)state;
    test_rng rng = case_rng(104);
    static const int32_t tokens[] = {1, 17, 300, 2500};
    for (int fi = 0; fi < COUNT(kFlavours); ++fi) {
        const flavour *f = &kFlavours[fi];
        const int32_t E = f->E ? f->E : 64, k = f->k ? f->k : 6;
        for (int t = 0; t < COUNT(tokens); ++t)
            for (int v = 0; v < 4; ++v) {
                route_case c = {f, E, k, 16, tokens[t], tokens[t] * 3 + 5, (v & 1) ? ALPHAMOE_FLAG_TAIL_FILL : 0u,
                                (v + t) % 4, LOGITS_RANDOM, BIAS_RANDOM, (v >> 1) & 1};
                run_case(&c, &rng);
            }
    }
    report("optional outputs and tail fill");
}

/* M == 0 writes num_tokens_post_padded = 0 and nothing else; NULL
 * token-shaped pointers and NULL per-expert inputs are fine then. */
static void gpu_flavours_empty_batch(void **state) {
    (void)state;
    test_rng rng = case_rng(105);
    for (int fi = 0; fi < COUNT(kFlavours); ++fi) {
        const flavour *f = &kFlavours[fi];
        route_case c = {f, f->E ? f->E : 64, f->k ? f->k : 4, 16, 0, 100, ALPHAMOE_FLAG_TAIL_FILL, fi % 4,
                        LOGITS_RANDOM, BIAS_RANDOM, 1};
        case_inputs in;
        inputs_make(&in, &c, &rng);
        device_plan d;
        device_plan_alloc(&d, in.router, 1);
        const int supported = flavour_supported_on_gpu(in.router, 0);
        device_plan_poison(&d, 0);
        alphamoe_buffers b = d.buffers;
        b.topk_ids = NULL;
        b.topk_weights = NULL;
        b.pair_to_sorted = NULL;
        b.correction_bias = NULL;
        b.expert_map = NULL;
        const alphamoe_status st = alphamoe_route(in.router, 0, NULL, &b, NULL);
        CUDA_OK(cudaDeviceSynchronize());
        device_plan_read(&d, 0);
        char desc[384];
        describe(&c, desc, sizeof desc);
        if (!supported) {
            if (st != ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR) fail_msg("%s: %s", desc, alphamoe_status_string(st));
            expect_unwritten(&d, desc);
            ++g_refused;
            ++g_refused_total;
        } else {
            ROUTE_OK(st);
            check_against(&in.expected, &d, &c, "empty batch");
            ++g_ran;
        }
        device_plan_free(&d);
        inputs_free(&in);
    }
    report("empty batch");
}

/* The large kernel's grid for a case's router (forced large) at M tokens. */
static alphamoe_selection large_selection(const route_case *c, int32_t M) {
    route_case at = *c;
    at.M = M;
    at.max_tokens = 0;
    at.force = ALPHAMOE_SPECIALIZATION_LARGE;
    const alphamoe_params p = case_params(&at);
    alphamoe_router *router = NULL;
    ROUTE_OK(alphamoe_router_create(&p, &router));
    const alphamoe_device_attributes attrs = current_device_attributes();
    alphamoe_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.struct_size = sizeof sel;
    ROUTE_OK(alphamoe_router_select(router, M, &attrs, &sel));
    alphamoe_router_destroy(router);
    return sel;
}

/* The flavours that are the plain softmax over 16-bit logits. */
static int plain_half_logits(const flavour *f) {
    return f->logits_type != F32 && f->scoring == SMX && f->flags == 0 && f->groups == 0 && f->ep == EP_NONE &&
           f->E == 0 && f->scale == 0.0f;
}

/* A forced large case of `per_cta` tokens a CTA. */
static route_case staged_case(const route_case *shape, int32_t per_cta) {
    route_case c = *shape;
    c.M = per_cta * large_selection(shape, 64 * 256).grid_ctas;
    c.force = ALPHAMOE_SPECIALIZATION_LARGE;
    const alphamoe_selection sel = large_selection(&c, c.M);
    if ((int)sel.specialization != ALPHAMOE_SPECIALIZATION_LARGE || sel.tokens_per_cta != per_cta)
        fail_msg("M=%d: specialization %d, %d tokens a CTA, not large with %d", c.M, sel.specialization,
                 sel.tokens_per_cta, per_cta);
    return c;
}

/* The plain large kernel's staged entry points for 16-bit logits
 * (stages_pairs, capi/plan.cpp), bf16 and fp16, on both sides of the limits
 * test_gpu.c's gpu_staged_limits takes fp32 logits through: 204 and 205
 * tokens a CTA of k = 10 at E512, 102 and 103, E64 k = 2 at 64 and 65,
 * blocks whose ids the staged pairs write (block_m 64), and rows of 8 and 4
 * slots, which warp_rank_half_row ranks. Equal logits make the ranks
 * largest. */
static void gpu_flavours_staged_half_logits(void **state) {
    (void)state;
    test_rng rng = case_rng(108);
    static const struct {
        int32_t E, k, block_m, per_cta;
        uint32_t flags;
        logit_pattern pattern;
    } shapes[] = {{512, 10, 8, 204, 0u, LOGITS_ALL_EQUAL},
                  {512, 10, 8, 204, ALPHAMOE_FLAG_SHARED_EXPERT, LOGITS_QUANTIZED},
                  {512, 10, 8, 205, 0u, LOGITS_RANDOM},
                  {512, 10, 8, 102, 0u, LOGITS_QUANTIZED},
                  {512, 10, 8, 103, 0u, LOGITS_RANDOM},
                  {256, 8, 16, 128, 0u, LOGITS_QUANTIZED},
                  {128, 8, 16, 128, ALPHAMOE_FLAG_SHARED_EXPERT, LOGITS_RANDOM},
                  {64, 2, 4, 64, 0u, LOGITS_ALL_EQUAL},
                  {64, 2, 4, 65, 0u, LOGITS_ALL_EQUAL},
                  {8, 2, 64, 64, 0u, LOGITS_RANDOM},
                  {512, 10, 64, 110, ALPHAMOE_FLAG_SHARED_EXPERT, LOGITS_QUANTIZED}};
    int idx = 0;
    for (int fi = 0; fi < COUNT(kFlavours); ++fi) {
        if (!plain_half_logits(&kFlavours[fi])) continue;
        for (int s = 0; s < COUNT(shapes); ++s, ++idx) {
            const route_case shape = {&kFlavours[fi], shapes[s].E, shapes[s].k, shapes[s].block_m, 1, 0,
                                      shapes[s].flags | (idx % 3 ? 0u : ALPHAMOE_FLAG_TAIL_FILL), 0,
                                      shapes[s].pattern, BIAS_RANDOM, idx % 2};
            route_case c = staged_case(&shape, shapes[s].per_cta);
            run_case(&c, &rng);
        }
    }
    if (idx == 0) fail_msg("no flavour is the plain softmax over 16-bit logits");
    report("staged entry points for 16-bit logits");
}

/* Small shapes of every flavour through the flavoured and wide kernels
 * (and the plain kernels' entry points for 16-bit logits), for the
 * compute-sanitizer runs. */
static void gpu_flavours_sanitizer_sweep(void **state) {
    (void)state;
    test_rng rng = case_rng(106);
    /* 5 tokens: the flavoured tiny kernel's few-token plan. */
    static const int32_t tokens[] = {1, 5, 37, 300};
    /* A racecheck of every flavour outlasts one test's time: meson runs
     * it in shards of the flavours. */
    int shards = 1;
    const int shard = test_shard(&shards);
    assert_true(shard >= 0);
    for (int fi = shard; fi < COUNT(kFlavours); fi += shards) {
        const flavour *f = &kFlavours[fi];
        /* The flavours' own E give rows of 1, 2, 8 and 16 slots; the others
         * alternate 64 (2 slots) and 128 (4), so every entry point runs.
         * 16-bit logits of no E of their own also at rows of 1, 8 and 16
         * slots: the entry points for them (every plain kernel's, the
         * flavoured large kernel's), every width, routed-only and
         * shared-expert. */
        const int32_t widths[4] = {f->E ? f->E : (fi % 2 ? 128 : 64), 16, 256, 512};
        const int n_widths = f->E == 0 && f->logits_type != F32 ? 4 : 1;
        const int32_t k = f->k ? f->k : 6;
        for (int w = 0; w < n_widths; ++w)
            for (int t = 0; t < COUNT(tokens); ++t)
                for (int force = ALPHAMOE_SPECIALIZATION_TINY; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force) {
                    route_case c = {f, widths[w], k, 8, tokens[t], 0, ALPHAMOE_FLAG_TAIL_FILL, force,
                                    LOGITS_QUANTIZED, BIAS_TIES, 1};
                    /* The shared-expert kernels too, where the flavour allows it. */
                    if (f->scoring == SMX && f->groups == 0 && k >= 2 && tokens[t] == 37)
                        c.extra_flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
                    run_case(&c, &rng);
                }
        /* The small kernel's token-CTA entry points: 4 and 13 tokens (a
         * cluster of the portable size, and one beyond it) of sigmoid or
         * sqrt-softplus scoring over more than 128 experts, random logits, so that each
         * CTA ranks its token. */
        for (int32_t M = 4; f->scoring != SMX && widths[0] > 128 && M <= 13; M += 9) {
            route_case c = {f, widths[0], k, 8, M, 0, ALPHAMOE_FLAG_TAIL_FILL, ALPHAMOE_SPECIALIZATION_AUTO,
                            LOGITS_RANDOM, BIAS_RANDOM, 1};
            run_case(&c, &rng);
        }
        /* The plain large kernel's staged entry points for 16-bit logits:
         * 180 tokens a CTA, more than two pairs (k = 6) an expert a CTA at
         * every width. */
        if (!plain_half_logits(f)) continue;
        for (int w = 0; w < n_widths; ++w) {
            const uint32_t flags = ALPHAMOE_FLAG_TAIL_FILL | (w % 2 ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u);
            const route_case shape = {f, widths[w], k, 8, 1, 0, flags, 0, LOGITS_QUANTIZED, BIAS_TIES, 1};
            route_case c = staged_case(&shape, 180);
            run_case(&c, &rng);
        }
    }
    report("sanitizer sweep");
}

/* ------------------------------------------------------------------ soak */

/* A flavour drawn at random, its name spelled out for a failure's
 * message. */
typedef struct random_flavour {
    flavour f;
    char name[160];
} random_flavour;

/* A divisor of E in [2, most], or 1 where E has none. */
static int32_t random_divisor(test_rng *rng, int32_t E, int32_t most) {
    int32_t divisors[32];
    int n = 0;
    for (int32_t g = 2; g <= most && g <= E && n < COUNT(divisors); ++g)
        if (E % g == 0) divisors[n++] = g;
    return n ? divisors[rng_below(rng, (uint32_t)n)] : 1;
}

/* Any scoring, correction bias, grouping (up to the kernels' 32 groups;
 * groups of 32 experts, the CTA ranking's, a quarter of the time),
 * normalization, scale, logits type and expert parallelism, hash routing
 * where no groups or bias were drawn, and redundant experts. The groups kept start at a
 * random count; draw_flavour_case raises it to hold k, then names the
 * flavour. */
static void draw_flavour(test_rng *rng, int32_t E, random_flavour *out) {
    static const int32_t types[] = {F32, F32, BF16, F16};
    static const float scales[] = {0.0f, 0.0f, 1.0f, 2.5f, 2.827f, 0.5f};
    flavour *f = &out->f;
    memset(f, 0, sizeof *f);
    f->scoring = rng_below(rng, 2) ? (int32_t)(1 + rng_below(rng, 2)) : SMX;
    if (f->scoring != SMX && rng_below(rng, 3)) f->flags |= BIAS;
    if (rng_below(rng, 4) == 0) f->flags |= NO_RENORM;
    f->logits_type = types[rng_below(rng, COUNT(types))];
    switch (rng_below(rng, 4)) {
    case 0: f->groups = E % 32 == 0 && E / 32 <= 32 ? E / 32 : random_divisor(rng, E, 32); break;
    case 1: f->groups = random_divisor(rng, E, 32); break;
    default: f->groups = 0; break;
    }
    f->topk_groups = f->groups > 1 ? 1 + (int32_t)rng_below(rng, (uint32_t)f->groups) : 0;
    f->scale = scales[rng_below(rng, COUNT(scales))];
    f->ep = rng_below(rng, 3) == 0 ? 1 + (int)rng_below(rng, 3) : EP_NONE;
    if (f->groups == 0 && !(f->flags & BIAS) && rng_below(rng, 4) == 0) f->vocab = 1 + (int32_t)rng_below(rng, 5000);
    if (rng_below(rng, 4) == 0) f->flags |= REPLICAS;
}

static void name_random_flavour(random_flavour *rf) {
    static const char *const ep_names[] = {"", ", local range", ", expert map", ", map of shared ids"};
    const flavour *f = &rf->f;
    snprintf(rf->name, sizeof rf->name, "random: %s%s%s, %s logits, %d groups keep %d, scale %g%s, vocab %d%s",
             scoring_name(f->scoring), (f->flags & BIAS) ? " with bias" : "",
             (f->flags & NO_RENORM) ? ", no renormalization" : "", logits_type_name(f->logits_type), f->groups,
             f->topk_groups, (double)f->scale, ep_names[f->ep], f->vocab,
             (f->flags & REPLICAS) ? ", redundant experts" : "");
    rf->f.name = rf->name;
}

/* One of the list's flavours of a model's own E and k, as served. */
static void draw_model_flavour(test_rng *rng, random_flavour *out) {
    int models[COUNT(kFlavours)];
    int n = 0;
    for (int i = 0; i < COUNT(kFlavours); ++i)
        if (kFlavours[i].E) models[n++] = i;
    out->f = kFlavours[models[rng_below(rng, (uint32_t)n)]];
    snprintf(out->name, sizeof out->name, "%s", out->f.name);
    out->f.name = out->name;
}

/* A case of a random flavour (a model's a quarter of the time, so that the
 * paths they take are drawn often): E of the models or any up to 512, M
 * over every specialization's range (a CTA a token's 2 to 16 often), any
 * block_m, options and specialization; random logits half the time (the
 * rankings' fast paths), any pattern else, any bias pattern. */
static route_case draw_flavour_case(test_rng *rng, random_flavour *rf) {
    flavour *f = &rf->f;
    int32_t E, k;
    if (rng_below(rng, 4) == 0) {
        draw_model_flavour(rng, rf);
        E = f->E;
        k = f->k;
    } else {
        E = soak_random_experts(rng);
        draw_flavour(rng, E, rf);
        k = soak_random_top_k(rng, E);
        if (f->groups > 1)
            while ((int64_t)f->topk_groups * (E / f->groups) < k) ++f->topk_groups;
        name_random_flavour(rf);
    }
    const int32_t M = soak_random_tokens(rng);
    /* One draw a statement: the order of an initializer list's is not
     * specified, and a printed seed must replay the case. */
    route_case c;
    memset(&c, 0, sizeof c);
    c.f = f;
    c.E = E;
    c.k = k;
    c.M = M;
    c.block_m = soak_random_block_m(rng);
    c.max_tokens = soak_random_max_tokens(rng, M);
    c.extra_flags = rng_below(rng, 2) ? ALPHAMOE_FLAG_TAIL_FILL : 0u;
    c.extra_flags |= rng_below(rng, 2) ? ALPHAMOE_FLAG_PDL : 0u;
    c.extra_flags |= k >= 2 && rng_below(rng, 3) == 0 ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u;
    c.force = (int32_t)rng_below(rng, 4);
    c.pattern = rng_below(rng, 2) ? LOGITS_RANDOM : (logit_pattern)rng_below(rng, LOGITS_PATTERN_COUNT);
    c.bias = (bias_pattern)rng_below(rng, BIAS_PATTERN_COUNT);
    c.with_optional = (int)rng_below(rng, 2);
    return c;
}

/* Whether the library creates the case's router (the shared expert, say,
 * takes no groups), and then the specialization its call takes here. */
static int case_selection(const route_case *c, const alphamoe_device_attributes *attrs, alphamoe_selection *sel) {
    const alphamoe_params p = case_params(c);
    alphamoe_router *r = NULL;
    if (alphamoe_router_create(&p, &r) != ALPHAMOE_OK) return 0;
    memset(sel, 0, sizeof *sel);
    sel->struct_size = sizeof *sel;
    ROUTE_OK(alphamoe_router_select(r, c->M, attrs, sel));
    alphamoe_router_destroy(r);
    return 1;
}

/* Random flavours against the host reference for ALPHAMOE_SOAK_SECONDS:
 * the fixed flavour lists above cross few of the flavours' options with
 * one another; these draw every combination the contract allows. */
static void soak_flavours_differential(void **state) {
    (void)state;
    const alphamoe_device_attributes attrs = current_device_attributes();
    soak_clock clock;
    soak_start(&clock);
    long cases = 0, pairs = 0;
    long taken[ALPHAMOE_SPECIALIZATION_LARGE + 1] = {0}; /* cases by the specialization chosen */
    long token_ctas = 0;                              /* small's a CTA a token among them */
    while (soak_running(&clock)) {
        test_rng rng;
        soak_case_rng(&rng, cases, 0xF1A7u);
        random_flavour rf;
        route_case c;
        alphamoe_selection sel;
        do {
            c = draw_flavour_case(&rng, &rf);
        } while (!case_selection(&c, &attrs, &sel));
        ++taken[sel.specialization];
        token_ctas += sel.specialization == ALPHAMOE_SPECIALIZATION_SMALL && sel.tokens_per_cta == 1 && c.M >= 2;
        char name[sizeof rf.name + 32];
        snprintf(name, sizeof name, "soak case %ld, %s", cases, rf.name);
        rf.f.name = name;
        run_case(&c, &rng);
        ++cases;
        pairs += (long)c.M * c.k;
        if (soak_report_due(&clock))
            print_message("# %.0f s: %ld random flavour cases equal to the host reference\n", clock.last_report,
                          cases);
    }
    print_message("# flavours differential: %ld random cases (%ld token-expert pairs) in %ld s, %d equal to the "
                  "host reference, %d refused as not implemented by the kernels; tiny %ld, small %ld (%ld of them a "
                  "CTA a token), large %ld\n",
                  cases, pairs, clock.budget_seconds, g_ran, g_refused, taken[ALPHAMOE_SPECIALIZATION_TINY],
                  taken[ALPHAMOE_SPECIALIZATION_SMALL], token_ctas, taken[ALPHAMOE_SPECIALIZATION_LARGE]);
}

/* ------------------------------------------------------------------ main */

static int reset_counts(void **state) {
    (void)state;
    g_ran = g_refused = 0;
    return 0;
}

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    test_base_seed();
    take_model_presets();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(gpu_flavours_grid, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_limits_grid, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_nonfinite, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_specializations_agree, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_entry_points_agree, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_optional_outputs_and_tail, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_few_tokens, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_wide_rows_few_tokens, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_token_ctas, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_empty_batch, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_staged_half_logits, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_shared_workspace, reset_counts),
        cmocka_unit_test_setup(gpu_flavours_sanitizer_sweep, reset_counts),
        cmocka_unit_test_setup(soak_flavours_differential, reset_counts),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const int failed = cmocka_run_group_tests_name("gpu_flavours", tests, NULL, NULL);
    if (failed == 0 && g_refused_total > 0) {
        printf("SKIP: %d case(s) are flavours the GPU kernels of this library do not implement: alphamoe_route "
               "refused each with ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR and wrote nothing (checked); the cases that "
               "ran equal the host reference (counts above). Not a pass until the kernels implement every "
               "flavour here.\n",
               g_refused_total);
        return SKIP_RETURN_CODE;
    }
    return failed;
}
