/* libFuzzer target over everything of the library that runs without a GPU:
 * parameter validation (alphamoe_router_create) of every field, the routing
 * flavours' included, sizing, the variant selection, the argument checks of
 * both routing entry points, and the host reference, compared with the
 * tests' second implementation of the contract (support/flavour_reference.c)
 * and a plan validator.
 *
 * The input is read as a parameter set, its flavour fields, a call, device
 * attributes, buffer damage, the correction bias, the expert map, hash
 * routing's token ids and table, the replica tables and physical_load, then
 * logit bits. Each field is either taken raw (any 32- or 64-bit value, to
 * hit the range checks) or folded into its valid range (to reach the
 * routing itself). Token counts fold to at most 64, or, for one value in
 * eight of their mode byte, to as many as buffers of 2^18 elements hold:
 * up to 262,144 tokens of one expert, fewer the wider the rows. Every outcome is checked
 * against a model written here from the header's words alone:
 *   - a status other than OK must name something that really is wrong, and
 *     nothing may be written (every buffer, guards included, compared byte
 *     for byte);
 *   - when nothing is wrong the call must succeed, and its outputs must be
 *     the second implementation's (ids and plan exact, weights within the
 *     contract's tolerance), the plan valid, nothing written past the live
 *     extents, the same bytes on a second call.
 * The GPU entry point is driven too, with the driver hidden, so that a call
 * that passes validation stops at ALPHAMOE_ERROR_NO_DRIVER (or, for more
 * groups than the kernels hold, ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR) before
 * touching anything. Any disagreement aborts, which libFuzzer reports as a
 * crash. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alphamoe/router_diagnostics.h"
#include "flavour_reference.h"
#include "logits_types.h"
#include "test_support.h"

/* Routing runs only on inputs whose buffers stay small: the point is the
 * logic, not the memory bandwidth. */
#define FUZZ_MAX_TOKENS 64
#define FUZZ_MAX_BUFFER_ELEMENTS (1 << 18)
/* The kernels' most groups (kMaxGpuGroups): more route on the CPU only. */
#define FUZZ_MAX_GPU_GROUPS 32

/* Whether the kernels implement the flavour (router.h): up to 32 groups. */
static int gpu_runs_flavour(const alphamoe_params *p) { return p->num_groups <= FUZZ_MAX_GPU_GROUPS; }

static const int32_t kImageArchs[] = {ALPHAMOE_EXPECTED_ARCHS};

#define CHECK(cond, ...)                                      \
    do {                                                      \
        if (!(cond)) {                                        \
            fprintf(stderr, "fuzz_host: check failed: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__);                     \
            fprintf(stderr, "\n");                            \
            abort();                                          \
        }                                                     \
    } while (0)

/* ------------------------------------------------------------ input reader */

typedef struct reader {
    const uint8_t *data;
    size_t size, at;
} reader;

static uint64_t take(reader *r, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= (uint64_t)(r->at < r->size ? r->data[r->at++] : 0u) << (8 * i);
    return v;
}

/* ------------------------------------------------------------ the model */

typedef uint32_t status_set; /* bit s: status s is an acceptable answer */
#define S(x) (1u << (x))

static int64_t model_capacity(int64_t pairs, int64_t experts, int64_t bm) {
    const int64_t nonempty = pairs < experts ? pairs : experts;
    return (nonempty + (pairs - nonempty) / bm) * bm;
}

/* The parameters as the library reads them: the fields past an older
 * version's struct_size are zero. */
static alphamoe_params as_read(const alphamoe_params *p) {
    alphamoe_params q = *p;
    const size_t first_version = offsetof(alphamoe_params, scoring), v2 = offsetof(alphamoe_params, vocab_size);
    if (p->struct_size <= first_version)
        memset((char *)&q + first_version, 0, sizeof q - first_version);
    else if (p->struct_size <= v2)
        memset((char *)&q + v2, 0, sizeof q - v2);
    return q;
}

/* Every status alphamoe_router_create may give for p: each field that is
 * out of the range the header states. Empty: the parameters are valid. */
static status_set create_violations(const alphamoe_params *given) {
    /* A published size (the first version's, 0.2's, or this header's and above). */
    const size_t first_version = offsetof(alphamoe_params, scoring), v2 = offsetof(alphamoe_params, vocab_size);
    if (given->struct_size < first_version || (given->struct_size > first_version && given->struct_size < v2) ||
        (given->struct_size > v2 && given->struct_size < sizeof(alphamoe_params)))
        return S(ALPHAMOE_ERROR_STRUCT_SIZE);
    const alphamoe_params q = as_read(given);
    const alphamoe_params *p = &q;
    status_set v = 0;
    const int e_ok = p->num_experts >= 1 && p->num_experts <= ALPHAMOE_MAX_EXPERTS;
    if (!e_ok) v |= S(ALPHAMOE_ERROR_NUM_EXPERTS);
    const int k_ok = p->top_k >= 1 && p->top_k <= ALPHAMOE_MAX_TOP_K && (!e_ok || p->top_k <= p->num_experts);
    if (!k_ok) v |= S(ALPHAMOE_ERROR_TOP_K);
    const int bm_ok = p->block_m >= 1 && p->block_m <= ALPHAMOE_MAX_BLOCK_M;
    if (!bm_ok) v |= S(ALPHAMOE_ERROR_BLOCK_M);
    if (p->flags & ~ALPHAMOE_FLAG_ALL) v |= S(ALPHAMOE_ERROR_FLAGS);
    if ((p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) && p->top_k < 2) v |= S(ALPHAMOE_ERROR_SHARED_EXPERT);
    if (p->force_specialization < 0 || p->force_specialization > 3) v |= S(ALPHAMOE_ERROR_SPECIALIZATION);
    const int type_ok = p->logits_type >= ALPHAMOE_LOGITS_F32 && p->logits_type <= ALPHAMOE_LOGITS_F16;
    if (!type_ok) v |= S(ALPHAMOE_ERROR_LOGITS_TYPE);
    if (p->logits_row_stride < 0 || (p->logits_row_stride != 0 && e_ok && p->logits_row_stride < p->num_experts)) {
        v |= S(ALPHAMOE_ERROR_ROW_STRIDE);
    } else if (p->max_tokens >= 0) {
        /* The logits' byte extent must fit 64 bits. */
        const int64_t rows = p->max_tokens > 1 ? p->max_tokens : 1;
        const int64_t stride = p->logits_row_stride ? p->logits_row_stride : (e_ok ? p->num_experts : 1);
        const int64_t bytes = p->logits_type == ALPHAMOE_LOGITS_F32 || !type_ok ? 4 : 2;
        if (stride > INT64_MAX / bytes / rows) v |= S(ALPHAMOE_ERROR_ROW_STRIDE);
    }
    /* Scoring, groups, shared expert, scale. */
    if (p->scoring != ALPHAMOE_SCORING_SOFTMAX && p->scoring != ALPHAMOE_SCORING_SIGMOID &&
        p->scoring != ALPHAMOE_SCORING_SQRT_SOFTPLUS)
        v |= S(ALPHAMOE_ERROR_SCORING);
    if ((p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) && p->scoring == ALPHAMOE_SCORING_SOFTMAX)
        v |= S(ALPHAMOE_ERROR_SCORING);
    int32_t groups = 1;
    if (e_ok) {
        if (p->num_groups < 0 || p->num_groups > p->num_experts) {
            v |= S(ALPHAMOE_ERROR_GROUPS);
        } else {
            groups = p->num_groups > 1 ? p->num_groups : 1;
            const int32_t kept = p->topk_groups > 0 ? p->topk_groups : groups;
            if (p->num_experts % groups || p->topk_groups < 0 || p->topk_groups > groups ||
                (int64_t)kept * (p->num_experts / groups) < p->top_k)
                v |= S(ALPHAMOE_ERROR_GROUPS);
        }
    }
    if ((p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) && (p->scoring != ALPHAMOE_SCORING_SOFTMAX || groups > 1))
        v |= S(ALPHAMOE_ERROR_SHARED_EXPERT);
    if (!isfinite(p->routed_scaling_factor) || p->routed_scaling_factor < 0.0f) v |= S(ALPHAMOE_ERROR_SCALING_FACTOR);
    /* Redundant experts: P in [1, 2048] and R in [1, P] with the flag,
     * both 0 without it; expert parallelism is then over P. */
    const int redundant = (p->flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) != 0;
    const int replicas_ok = redundant ? p->num_physical_experts >= 1 && p->num_physical_experts <= ALPHAMOE_MAX_EXPERTS &&
                                            p->replica_slots >= 1 && p->replica_slots <= p->num_physical_experts
                                      : p->num_physical_experts == 0 && p->replica_slots == 0;
    if (!replicas_ok) v |= S(ALPHAMOE_ERROR_REDUNDANT_EXPERTS);
    /* Expert parallelism: by map (count in [1, E], begin 0) or by range. */
    const int64_t E = !e_ok || (redundant && !replicas_ok) ? 0 : redundant ? p->num_physical_experts : p->num_experts,
                  begin = p->local_expert_begin, count = p->local_expert_count;
    int ep_ok;
    if (p->flags & ALPHAMOE_FLAG_EXPERT_MAP) ep_ok = count >= 1 && count <= E && begin == 0;
    else if (count == 0) ep_ok = begin == 0;
    else ep_ok = count > 0 && begin >= 0 && begin + count <= E;
    if (!ep_ok && E > 0) v |= S(ALPHAMOE_ERROR_EXPERT_PARALLEL);
    /* Hash routing: a vocabulary with the flag only, and nothing that
     * steers a ranking or fixes a slot beside it. */
    if (p->flags & ALPHAMOE_FLAG_HASH_ROUTING) {
        if (p->vocab_size < 1 || groups > 1 ||
            (p->flags & (ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_SHARED_EXPERT)))
            v |= S(ALPHAMOE_ERROR_HASH_ROUTING);
    } else if (p->vocab_size != 0) {
        v |= S(ALPHAMOE_ERROR_HASH_ROUTING);
    }
    if (p->reserved2 != 0) v |= S(ALPHAMOE_ERROR_INVALID_ARGUMENT);
    if (p->reserved != 0) v |= S(ALPHAMOE_ERROR_INVALID_ARGUMENT);
    /* The plan must fit int32: its pairs, and its capacity over the plan's
     * experts. */
    if (p->max_tokens < 0) {
        v |= S(ALPHAMOE_ERROR_MAX_TOKENS);
    } else if (k_ok && e_ok && bm_ok) {
        const int64_t pairs = (int64_t)p->max_tokens * p->top_k;
        const int64_t L = ep_ok && count > 0 ? count : E;
        if (pairs > INT32_MAX || model_capacity(pairs, L, p->block_m) > INT32_MAX) v |= S(ALPHAMOE_ERROR_MAX_TOKENS);
    }
    return v;
}

/* The normalized parameters alphamoe_router_get_params returns. */
static alphamoe_params normalized(const alphamoe_params *given) {
    alphamoe_params p = as_read(given);
    p.struct_size = sizeof p;
    if (p.logits_row_stride == 0) p.logits_row_stride = p.num_experts;
    if (p.num_groups < 1) p.num_groups = 1;
    if (p.topk_groups == 0) p.topk_groups = p.num_groups;
    if (p.routed_scaling_factor == 0.0f) p.routed_scaling_factor = 1.0f;
    if (p.local_expert_count == 0)
        p.local_expert_count = (p.flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) ? p.num_physical_experts : p.num_experts;
    return p;
}

/* ------------------------------------------------------------ one call */

enum { F_LOGITS, F_TOPK_IDS, F_TOPK_WEIGHTS, F_SORTED, F_EXPERT_IDS, F_NTPP, F_COUNTS, F_OFFSETS,
       F_PAIR_TO_SORTED, F_WORKSPACE, F_BIAS, F_MAP, F_TOKENS, F_TABLE, F_L2P, F_REPLICAS, F_LOAD, F_COUNT };

typedef struct call_setup {
    host_plan plan;
    void *logits;       /* of the router's logits_type */
    float *values;      /* the fp32 value of each logit, as the contract reads it */
    size_t logits_bytes;
    unsigned char *workspace_raw;
    size_t workspace_raw_bytes;
    float *bias;        /* [E] */
    int32_t *map;       /* [G]: the plan's experts (P with redundant experts, else E) */
    int32_t *tokens;    /* [rows]: token ids of hash routing */
    int32_t *table;     /* [table_rows, k]: its table, as much of it as the token ids reach */
    int64_t table_entries;
    int32_t *l2p;       /* [E, R]: redundant experts' replicas */
    int32_t *replicas;  /* [E]: their counts */
    int32_t *load;      /* [P]: physical_load, with start values */
    alphamoe_buffers buffers;
    const void *logits_arg;
} call_setup;

static void *pointer_of(alphamoe_buffers *b, const void **logits, int f) {
    switch (f) {
    case F_LOGITS: return (void *)*logits;
    case F_TOPK_IDS: return b->topk_ids;
    case F_TOPK_WEIGHTS: return b->topk_weights;
    case F_SORTED: return b->sorted_token_ids;
    case F_EXPERT_IDS: return b->expert_ids;
    case F_NTPP: return b->num_tokens_post_padded;
    case F_COUNTS: return b->expert_counts;
    case F_OFFSETS: return b->expert_offsets;
    case F_PAIR_TO_SORTED: return b->pair_to_sorted;
    case F_BIAS: return (void *)b->correction_bias;
    case F_MAP: return (void *)b->expert_map;
    case F_TOKENS: return (void *)b->token_ids;
    case F_TABLE: return (void *)b->hash_table;
    case F_L2P: return (void *)b->logical_to_physical;
    case F_REPLICAS: return (void *)b->replica_count;
    case F_LOAD: return b->physical_load;
    default: return b->workspace;
    }
}

static void set_pointer(alphamoe_buffers *b, const void **logits, int f, void *p) {
    switch (f) {
    case F_LOGITS: *logits = p; break;
    case F_TOPK_IDS: b->topk_ids = p; break;
    case F_TOPK_WEIGHTS: b->topk_weights = p; break;
    case F_SORTED: b->sorted_token_ids = p; break;
    case F_EXPERT_IDS: b->expert_ids = p; break;
    case F_NTPP: b->num_tokens_post_padded = p; break;
    case F_COUNTS: b->expert_counts = p; break;
    case F_OFFSETS: b->expert_offsets = p; break;
    case F_PAIR_TO_SORTED: b->pair_to_sorted = p; break;
    case F_BIAS: b->correction_bias = p; break;
    case F_MAP: b->expert_map = p; break;
    case F_TOKENS: b->token_ids = p; break;
    case F_TABLE: b->hash_table = p; break;
    case F_L2P: b->logical_to_physical = p; break;
    case F_REPLICAS: b->replica_count = p; break;
    case F_LOAD: b->physical_load = p; break;
    default: b->workspace = p; break;
    }
}

/* What alphamoe_route_host (gpu = 0) or alphamoe_route (gpu = 1) may answer
 * for these arguments, from the header's rules. */
static status_set call_violations(const alphamoe_router *r, const alphamoe_params *p, const alphamoe_sizes *z,
                                  int32_t M, const void *logits, const alphamoe_buffers *b, int gpu) {
    if (r == NULL || b == NULL) return S(ALPHAMOE_ERROR_NULL_POINTER);
    const size_t first_version = offsetof(alphamoe_buffers, correction_bias), v2 = offsetof(alphamoe_buffers, token_ids);
    if (b->struct_size < first_version || (b->struct_size > first_version && b->struct_size < v2) ||
        (b->struct_size > v2 && b->struct_size < sizeof(alphamoe_buffers)))
        return S(ALPHAMOE_ERROR_STRUCT_SIZE);
    /* Past an older version's struct_size the inputs it lacks read as NULL. */
    const int short_struct = b->struct_size == first_version;
    const float *bias = short_struct ? NULL : b->correction_bias;
    const int32_t *map = short_struct ? NULL : b->expert_map;
    const int32_t *tokens = b->struct_size <= v2 ? NULL : b->token_ids;
    const int32_t *table = b->struct_size <= v2 ? NULL : b->hash_table;
    const int32_t *l2p = b->struct_size <= v2 ? NULL : b->logical_to_physical;
    const int32_t *replicas = b->struct_size <= v2 ? NULL : b->replica_count;
    const int32_t *load = b->struct_size <= v2 ? NULL : b->physical_load;
    status_set v = 0;
    if (M < 0 || M > p->max_tokens) v |= S(ALPHAMOE_ERROR_NUM_TOKENS);
    const int needs_bias = M > 0 && (p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS);
    const int needs_map = M > 0 && (p->flags & ALPHAMOE_FLAG_EXPERT_MAP);
    const int needs_table = M > 0 && (p->flags & ALPHAMOE_FLAG_HASH_ROUTING);
    const int needs_replicas = M > 0 && (p->flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS);
    if ((M > 0 && (!logits || !b->topk_ids || !b->topk_weights)) ||
        (z->sorted_token_ids.elements > 0 && (!b->sorted_token_ids || !b->expert_ids)) ||
        !b->num_tokens_post_padded || (gpu && !b->workspace) || (needs_bias && !bias) || (needs_map && !map) ||
        (needs_table && (!tokens || !table)) || (needs_replicas && (!l2p || !replicas)))
        v |= S(ALPHAMOE_ERROR_NULL_POINTER);
    const uintptr_t logit_bytes = p->logits_type == ALPHAMOE_LOGITS_F32 ? 4 : 2;
    if ((uintptr_t)logits % logit_bytes) v |= S(ALPHAMOE_ERROR_ALIGNMENT);
    const void *word[] = {b->topk_ids, b->topk_weights, b->sorted_token_ids, b->expert_ids, b->num_tokens_post_padded,
                          b->expert_counts, b->expert_offsets, b->pair_to_sorted, needs_bias ? bias : NULL,
                          needs_map ? map : NULL, needs_table ? tokens : NULL, needs_table ? table : NULL,
                          needs_replicas ? l2p : NULL, needs_replicas ? replicas : NULL,
                          needs_replicas ? load : NULL};
    for (size_t i = 0; i < sizeof word / sizeof word[0]; ++i)
        if ((uintptr_t)word[i] % 4) v |= S(ALPHAMOE_ERROR_ALIGNMENT);
    if (gpu && (uintptr_t)b->workspace % (uintptr_t)z->workspace_alignment) v |= S(ALPHAMOE_ERROR_ALIGNMENT);
    if (b->sorted_token_ids_capacity < z->sorted_token_ids.elements || b->expert_ids_capacity < z->expert_ids.elements)
        v |= S(ALPHAMOE_ERROR_CAPACITY);
    if (gpu && b->workspace_bytes < (size_t)z->workspace.bytes) v |= S(ALPHAMOE_ERROR_WORKSPACE);
    return v;
}

/* Everything the call could write or read, with its guard: a copy to
 * compare. */
typedef struct snapshot {
    const unsigned char *at[F_COUNT];
    size_t bytes[F_COUNT];
    unsigned char *copy[F_COUNT];
} snapshot;

static void snapshot_take(snapshot *s, const call_setup *c, int32_t E, int32_t G) {
    const host_plan *pl = &c->plan;
    const alphamoe_sizes *z = &pl->sizes;
    const void *at[] = {c->logits, pl->topk_ids, pl->topk_weights, pl->sorted_token_ids, pl->expert_ids,
                        pl->num_tokens_post_padded, pl->expert_counts, pl->expert_offsets, pl->pair_to_sorted,
                        c->workspace_raw, c->bias, c->map, c->tokens, c->table, c->l2p, c->replicas, c->load};
    const int64_t n[] = {0, z->topk_ids.elements, z->topk_weights.elements, z->sorted_token_ids.elements,
                         z->expert_ids.elements, 1, z->expert_counts.elements, z->expert_offsets.elements,
                         z->pair_to_sorted.elements, 0, E, G, c->plan.params.max_tokens > 0 ? c->plan.params.max_tokens : 1,
                         c->table_entries, (int64_t)E * c->plan.params.replica_slots, E, c->plan.params.num_physical_experts};
    for (int f = 0; f < F_COUNT; ++f) {
        s->at[f] = at[f];
        s->bytes[f] = f == F_LOGITS ? c->logits_bytes : f == F_WORKSPACE ? c->workspace_raw_bytes
                                                                          : (size_t)(n[f] + TEST_GUARD) * 4u;
        s->copy[f] = malloc(s->bytes[f] ? s->bytes[f] : 1);
        CHECK(s->copy[f] != NULL, "out of memory");
        memcpy(s->copy[f], s->at[f], s->bytes[f]);
    }
}

static void snapshot_expect_same(snapshot *s, const char *what) {
    for (int f = 0; f < F_COUNT; ++f) {
        CHECK(memcmp(s->copy[f], s->at[f], s->bytes[f]) == 0, "%s: buffer %d written by a call that failed", what, f);
        free(s->copy[f]);
    }
}

static void snapshot_free(snapshot *s) {
    for (int f = 0; f < F_COUNT; ++f) free(s->copy[f]);
}

static void check_sizes(const alphamoe_params *p, const alphamoe_sizes *z) {
    const int64_t pairs = (int64_t)p->max_tokens * p->top_k;
    const int64_t L = p->local_expert_count;
    const int64_t cap = model_capacity(pairs, L, p->block_m);
    const alphamoe_extent *x[] = {&z->topk_ids, &z->topk_weights, &z->sorted_token_ids, &z->expert_ids,
                                  &z->num_tokens_post_padded, &z->expert_counts, &z->expert_offsets, &z->pair_to_sorted};
    const int64_t want[] = {pairs, pairs, cap, cap / p->block_m, 1, L, L + 1, pairs};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
        CHECK(x[i]->elements == want[i], "extent %zu: %lld elements, want %lld", i, (long long)x[i]->elements, (long long)want[i]);
        CHECK(x[i]->bytes == want[i] * 4, "extent %zu: bytes", i);
    }
    CHECK(cap % p->block_m == 0 && cap <= INT32_MAX, "capacity %lld", (long long)cap);
    CHECK(z->workspace.bytes > 0 && z->workspace.bytes == z->workspace.elements, "workspace extent");
    CHECK(z->workspace_alignment >= 16 && (z->workspace_alignment & (z->workspace_alignment - 1)) == 0,
          "workspace alignment %lld", (long long)z->workspace_alignment);
}

static void check_select(const alphamoe_router *r, const alphamoe_params *p, int32_t M, reader *in) {
    alphamoe_device_attributes d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    const uint8_t mode = (uint8_t)take(in, 1);
    static const int32_t ccs[] = {90, 100, 103, 80, 120, 0};
    d.compute_capability = (mode & 1) ? (int32_t)take(in, 4) : ccs[take(in, 1) % 6];
    d.multiprocessor_count = (mode & 2) ? (int32_t)take(in, 4) : 1 + (int32_t)(take(in, 2) % 400);
    d.cooperative_ctas_per_sm = (mode & 4) ? (int32_t)take(in, 4) : (int32_t)(take(in, 1) % 5);
    d.cooperative_launch = (mode & 8) ? (int32_t)take(in, 4) : (int32_t)(take(in, 1) & 1);
    d.max_cluster_ctas = (mode & 32) ? (int32_t)take(in, 4) : (int32_t)(take(in, 1) % 17);
    if (mode & 16) d.struct_size = take(in, 1) % sizeof d;

    /* The struct's published sizes: 0.2's (no max_cluster_ctas, read as 0)
     * and this version's. */
    const size_t first_version = offsetof(alphamoe_device_attributes, max_cluster_ctas);
    const int size_ok = d.struct_size == sizeof d || d.struct_size == first_version;
    const int32_t max_cluster = d.struct_size == sizeof d ? d.max_cluster_ctas : 0;
    int has_image = 0;
    for (size_t i = 0; i < sizeof kImageArchs / sizeof kImageArchs[0]; ++i) has_image |= kImageArchs[i] == d.compute_capability;
    const int sane = size_ok && has_image && d.multiprocessor_count >= 1 && d.cooperative_ctas_per_sm >= 0 &&
                     max_cluster >= 0;
    const int can_cooperate = d.cooperative_launch != 0 && d.cooperative_ctas_per_sm >= 1;
    const int forced_grid = p->force_specialization >= ALPHAMOE_SPECIALIZATION_SMALL;
    const int m_ok = M >= 0 && M <= p->max_tokens;
    const int gpu_flavour = gpu_runs_flavour(p);
    /* A forced large grid whose group sums cannot hold the call is refused
     * (over a billion pairs on 132 SMs; the library's own choice falls back
     * to small). */
    const int large_refused = p->force_specialization == ALPHAMOE_SPECIALIZATION_LARGE && sane && can_cooperate &&
                              !large_grid_holds(M, d.multiprocessor_count, p);

    alphamoe_selection s, before;
    memset(&s, 0xA5, sizeof s);
    s.struct_size = sizeof s;
    before = s;
    const alphamoe_status st = alphamoe_router_select(r, M, &d, &s);
    if (st != ALPHAMOE_OK) {
        const status_set allowed = S(ALPHAMOE_ERROR_STRUCT_SIZE) * !size_ok |
                                   S(ALPHAMOE_ERROR_NUM_TOKENS) * !m_ok |
                                   S(ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR) * !gpu_flavour |
                                   S(ALPHAMOE_ERROR_NO_IMAGE) * !has_image |
                                   S(ALPHAMOE_ERROR_INVALID_ARGUMENT) * !sane |
                                   S(ALPHAMOE_ERROR_UNSUPPORTED_DEVICE) * ((forced_grid && !can_cooperate) || large_refused);
        CHECK((allowed & S(st)) != 0, "select: status %d names nothing wrong (cc %d SMs %d occ %d coop %d M %d groups %d)",
              (int)st, d.compute_capability, d.multiprocessor_count, d.cooperative_ctas_per_sm, d.cooperative_launch, M,
              p->num_groups);
        CHECK(memcmp(&s, &before, sizeof s) == 0, "select wrote its output on failure");
        return;
    }
    CHECK(m_ok && sane && gpu_flavour && (!forced_grid || can_cooperate) && !large_refused,
          "select accepted what it should refuse (status OK)");
    const int64_t tokens = M > 0 ? M : 1;
    const int64_t resident = (int64_t)d.multiprocessor_count * d.cooperative_ctas_per_sm;
    CHECK(s.grid_ctas >= 1 && s.grid_ctas <= 256, "grid %d", s.grid_ctas);
    CHECK(s.tokens_per_cta >= 1, "tokens per CTA %d", s.tokens_per_cta);
    CHECK((int64_t)s.grid_ctas * s.tokens_per_cta >= tokens, "grid does not cover M=%d", M);
    CHECK((int64_t)(s.grid_ctas - 1) * s.tokens_per_cta < tokens, "a CTA without tokens");
    CHECK(s.block_threads == 512 && s.image_arch == d.compute_capability, "threads/image");
    CHECK(s.specialization == ALPHAMOE_SPECIALIZATION_TINY ? (s.grid_ctas == 1 && !s.cooperative) : s.cooperative != 0,
          "specialization %d grid %d coop %d", (int)s.specialization, s.grid_ctas, s.cooperative);
    CHECK(!s.cooperative || s.grid_ctas <= resident, "cooperative grid %d > resident %lld", s.grid_ctas, (long long)resident);
    CHECK(!forced_grid || (int)s.specialization == p->force_specialization, "forced specialization ignored");
    /* One cluster of the whole grid, small's only, no larger than the
     * device holds (0: the portable 8). */
    CHECK(s.cluster_ctas == 0 || (s.specialization == ALPHAMOE_SPECIALIZATION_SMALL && s.cluster_ctas == s.grid_ctas &&
                                  s.cluster_ctas <= (max_cluster > 0 ? max_cluster : 8)),
          "cluster of %d CTAs, grid %d, the device holds %d", s.cluster_ctas, s.grid_ctas, max_cluster);
}

/* The next input byte, or a byte of the position once the input is spent. */
static uint8_t next_byte(reader *in, size_t i) {
    const size_t left = in->size - in->at;
    return left ? in->data[in->at + i % left] : (uint8_t)(i * 37 + 11);
}

/* A redundant-experts call that succeeded (`got`), against the same logits
 * routed without the flag (and without expert parallelism) by the host
 * reference, itself checked against the second implementation, with the
 * replica rule applied by the tests' own code: ids, the plan, weights bit
 * for bit the unflagged call's, and +1 at each physical id in the load. */
static void check_replicated(const alphamoe_router *r, const alphamoe_params *p, const call_setup *c,
                             const host_plan *got, int32_t M,
                             int load_given, const int32_t *load_before) {
    alphamoe_params lp = *p;
    lp.flags &= ~(ALPHAMOE_FLAG_REDUNDANT_EXPERTS | ALPHAMOE_FLAG_EXPERT_MAP);
    lp.num_physical_experts = lp.replica_slots = 0;
    lp.local_expert_begin = lp.local_expert_count = 0;
    alphamoe_router *lr = NULL;
    CHECK(alphamoe_router_create(&lp, &lr) == ALPHAMOE_OK, "the router without redundant experts");
    host_plan logical, second, want;
    CHECK(host_plan_alloc(&logical, lr, 1) == 0 && host_plan_alloc(&second, lr, 1) == 0 &&
              host_plan_alloc(&want, r, 1) == 0,
          "host_plan_alloc");
    host_plan_poison(&logical);
    host_plan_poison(&second);
    host_plan_poison(&want);
    alphamoe_buffers lb = logical.buffers;
    lb.correction_bias = c->bias;
    lb.token_ids = c->tokens;
    lb.hash_table = c->table;
    CHECK(alphamoe_route_host(lr, M, c->logits_arg, &lb) == ALPHAMOE_OK, "the call without redundant experts");
    char why[512];
    const flavour_call call = {&logical.params, M, c->values, c->bias, NULL, c->tokens, c->table};
    flavour_reference_route(&call, &second);
    CHECK(compare_plans(&second, &logical, M, flavour_weight_tolerance(p), why, sizeof why) == 0,
          "without redundant experts, differs from the second implementation: %s (M=%d)", why, M);

    const int32_t P = p->num_physical_experts;
    int32_t *want_load = malloc(((size_t)P + TEST_GUARD) * 4u);
    CHECK(want_load != NULL, "out of memory");
    memcpy(want_load, load_before, ((size_t)P + TEST_GUARD) * 4u);
    flavour_reference_replicas(p, M, logical.topk_ids, c->replicas, c->l2p, want.topk_ids, load_given ? want_load : NULL);
    const size_t weight_bytes = (size_t)M * (size_t)p->top_k * sizeof(float);
    memcpy(want.topk_weights, logical.topk_weights, weight_bytes);
    flavour_reference_plan(p, M, c->map, &want);
    CHECK(compare_plans(&want, got, M, 0.0f, why, sizeof why) == 0, "redundant experts: %s (M=%d)", why, M);
    CHECK(memcmp(got->topk_weights, logical.topk_weights, weight_bytes) == 0,
          "redundant experts: weights differ from the call without the flag (M=%d)", M);
    for (int32_t q = 0; q < P + TEST_GUARD; ++q)
        CHECK(c->load[q] == want_load[q], "physical_load[%d] = %d, want %d%s (M=%d)", q, c->load[q], want_load[q],
              q >= P ? ", past P" : "", M);
    free(want_load);
    host_plan_free(&logical);
    host_plan_free(&second);
    host_plan_free(&want);
    alphamoe_router_destroy(lr);
}

/* Builds guarded buffers for r, damages them as the input says, calls both
 * entry points and checks the outcome. */
static void fuzz_call(const alphamoe_router *r, const alphamoe_params *p, int map_raw, reader *in) {
    alphamoe_sizes z;
    memset(&z, 0, sizeof z);
    z.struct_size = sizeof z;
    CHECK(alphamoe_router_sizes(r, &z) == ALPHAMOE_OK, "sizes of a valid router");
    check_sizes(p, &z);

    const uint8_t mode = (uint8_t)take(in, 1);
    const uint32_t m_raw = (uint32_t)take(in, 4);
    const int32_t M = (mode & 1) ? (int32_t)m_raw : (int32_t)(m_raw % ((uint32_t)p->max_tokens + 1u));
    check_select(r, p, M, in);

    const int32_t E = p->num_experts, G = plan_routed_experts(p);
    const int32_t P = p->num_physical_experts, R = p->replica_slots;
    const int64_t stride = p->logits_row_stride;
    const int64_t rows = p->max_tokens > 0 ? p->max_tokens : 1;
    if (z.sorted_token_ids.elements > FUZZ_MAX_BUFFER_ELEMENTS || z.topk_ids.elements > FUZZ_MAX_BUFFER_ELEMENTS ||
        stride > FUZZ_MAX_BUFFER_ELEMENTS / rows || (int64_t)E * R > FUZZ_MAX_BUFFER_ELEMENTS)
        return; /* validated and sized: too big to route here */

    /* Damage: NULL pointers, misaligned pointers, short capacities, a short
     * struct. Optional outputs left out (NULL) are no damage at all. */
    const uint32_t nulls = (uint32_t)take(in, 4);
    const uint32_t misaligned = (uint32_t)take(in, 4);
    const uint8_t shorts = (uint8_t)take(in, 1);
    /* Pointers move by 1 to 3 bytes (16-bit logits by 1), never a whole
     * element, so that an accepted call still writes where the plan's
     * arrays are. */
    const uint8_t by_raw = (uint8_t)take(in, 1);

    call_setup c;
    memset(&c, 0, sizeof c);
    CHECK(host_plan_alloc(&c.plan, r, 1) == 0, "host_plan_alloc");
    host_plan_poison(&c.plan);
    /* The correction bias (raw fp32 bits) and the expert map (raw, or a
     * local id of [0, L) or -1), each with a guard. */
    c.bias = malloc(((size_t)E + TEST_GUARD) * 4u);
    c.map = malloc(((size_t)G + TEST_GUARD) * 4u);
    CHECK(c.bias && c.map, "out of memory");
    for (int32_t e = 0; e < E + TEST_GUARD; ++e) {
        const uint32_t bits = e < E ? (uint32_t)take(in, 4) : 0xB1A5B1A5u;
        memcpy(&c.bias[e], &bits, 4);
    }
    for (int32_t g = 0; g < G + TEST_GUARD; ++g) {
        const uint32_t v = g < G ? (uint32_t)take(in, 4) : 0x3A93A93Au;
        c.map[g] = map_raw || g >= G ? (int32_t)v : (int32_t)(v % ((uint32_t)p->local_expert_count + 1u)) - 1;
    }
    /* Hash routing's token ids and table: ids of the table's rows, -1, the
     * vocabulary size itself and the int32 extremes (ids outside it), and
     * entries of experts, -1, E and the extremes (entries that name none).
     * A table of a raw vocabulary too large to hold is as long as the ids
     * that reach it, which stay below its length. */
    const int64_t table_rows = p->vocab_size < 4096 ? (p->vocab_size > 0 ? p->vocab_size : 1) : 4096;
    c.table_entries = table_rows * p->top_k;
    c.tokens = malloc(((size_t)rows + TEST_GUARD) * 4u);
    c.table = malloc(((size_t)c.table_entries + TEST_GUARD) * 4u);
    CHECK(c.tokens && c.table, "out of memory");
    const int32_t odd_ids[] = {-1, INT32_MIN, INT32_MAX, p->vocab_size};
    for (int64_t t = 0; t < rows + TEST_GUARD; ++t) {
        const uint32_t v = t < rows ? (uint32_t)take(in, 4) : 0x7D7D7D7Du;
        c.tokens[t] = t >= rows ? (int32_t)v : v % 8 == 0 ? odd_ids[(v >> 3) % 4] : (int32_t)((v >> 3) % (uint64_t)table_rows);
    }
    const int32_t odd_entries[] = {-1, INT32_MIN, INT32_MAX, E};
    for (int64_t i = 0; i < c.table_entries + TEST_GUARD; ++i) {
        const uint32_t v = i < c.table_entries ? (uint32_t)take(in, 2) : 0x7E7E7E7Eu;
        c.table[i] = i >= c.table_entries ? (int32_t)v : v % 16 == 0 ? odd_entries[(v >> 4) % 4] : (int32_t)((v >> 4) % (uint32_t)E);
    }
    /* Redundant experts' tables: counts in [1, R], one in sixteen 0, -1,
     * R + 1 or an int32 extreme; physical ids in [0, P), one in sixteen -1,
     * P or an extreme. The position is mixed in so that a spent input
     * still draws mostly valid entries. physical_load starts anywhere (its
     * sums wrap) and is left out for one mode value in four. */
    const int64_t replica_entries = (int64_t)E * R;
    c.replicas = malloc(((size_t)E + TEST_GUARD) * 4u);
    c.l2p = malloc(((size_t)replica_entries + TEST_GUARD) * 4u);
    c.load = malloc(((size_t)P + TEST_GUARD) * 4u);
    CHECK(c.replicas && c.l2p && c.load, "out of memory");
    const int32_t odd_counts[] = {0, -1, INT32_MIN, INT32_MAX, R + 1};
    for (int32_t e = 0; e < E + TEST_GUARD; ++e) {
        const uint32_t v = R > 0 && e < E ? ((uint32_t)take(in, 2) ^ (((uint32_t)e << 4 | 1u) & 0xFFFFu)) : 0x5C5C5C5Cu;
        c.replicas[e] = R == 0 || e >= E ? (int32_t)v : v % 16 == 0 ? odd_counts[(v >> 4) % 5] : 1 + (int32_t)((v >> 4) % (uint32_t)R);
    }
    const int32_t odd_physical[] = {-1, P, INT32_MIN, INT32_MAX};
    for (int64_t i = 0; i < replica_entries + TEST_GUARD; ++i) {
        const uint32_t v = i < replica_entries ? ((uint32_t)take(in, 2) ^ (((uint32_t)i << 4 | 1u) & 0xFFFFu)) : 0x6D6D6D6Du;
        c.l2p[i] = i >= replica_entries ? (int32_t)v : v % 16 == 0 ? odd_physical[(v >> 4) % 4] : (int32_t)((v >> 4) % (uint32_t)P);
    }
    const uint8_t load_mode = P > 0 ? (uint8_t)take(in, 1) : 0u;
    for (int32_t q = 0; q < P + TEST_GUARD; ++q) c.load[q] = q < P ? (int32_t)take(in, 4) : (int32_t)0x4C4C4C4Cu;
    /* The rest of the input is the logits' bits, repeated as needed. */
    const size_t type_bytes = logits_type_bytes(p->logits_type);
    const int64_t n_logits = rows * stride;
    c.logits_bytes = (size_t)n_logits * type_bytes;
    c.logits = malloc(c.logits_bytes ? c.logits_bytes : 1);
    c.values = malloc((size_t)n_logits * sizeof(float));
    CHECK(c.logits && c.values, "out of memory");
    unsigned char *bytes = c.logits;
    for (size_t i = 0; i < c.logits_bytes; ++i) bytes[i] = next_byte(in, i);
    for (int64_t i = 0; i < n_logits; ++i) {
        if (p->logits_type == ALPHAMOE_LOGITS_F32) {
            c.values[i] = ((const float *)c.logits)[i];
        } else {
            const uint16_t h = ((const uint16_t *)c.logits)[i];
            c.values[i] = p->logits_type == ALPHAMOE_LOGITS_BF16 ? bf16_value(h) : f16_value(h);
        }
    }
    /* One workspace for every input: megabytes allocated afresh each time
     * cost more than the call. */
    static unsigned char *workspace;
    static size_t workspace_capacity;
    c.workspace_raw_bytes = (size_t)z.workspace.bytes + 64;
    if (c.workspace_raw_bytes > workspace_capacity) {
        free(workspace);
        workspace_capacity = c.workspace_raw_bytes;
        workspace = aligned_alloc(64, (workspace_capacity + 63) / 64 * 64);
        CHECK(workspace != NULL, "out of memory");
    }
    c.workspace_raw = workspace;
    memset(c.workspace_raw, 0, c.workspace_raw_bytes);
    c.buffers = c.plan.buffers;
    c.buffers.workspace = c.workspace_raw;
    c.buffers.workspace_bytes = (size_t)z.workspace.bytes;
    c.buffers.correction_bias = c.bias;
    c.buffers.expert_map = c.map;
    c.buffers.token_ids = c.tokens;
    c.buffers.hash_table = c.table;
    c.buffers.logical_to_physical = c.l2p;
    c.buffers.replica_count = c.replicas;
    c.buffers.physical_load = load_mode % 4 == 3 ? NULL : c.load;
    c.logits_arg = c.logits;

    const alphamoe_router *router_arg = (mode & 2) && (shorts & 0x80) ? NULL : r;
    alphamoe_buffers *bp = (mode & 4) && (shorts & 0x40) ? NULL : &c.buffers;
    for (int f = 0; f < F_COUNT; ++f) {
        if (nulls & (1u << f)) set_pointer(&c.buffers, &c.logits_arg, f, NULL);
        void *ptr = pointer_of(&c.buffers, &c.logits_arg, f);
        const size_t by = f == F_WORKSPACE ? 1u + by_raw % 15u
                          : f == F_LOGITS && type_bytes == 2 ? 1u
                                                             : 1u + by_raw % 3u;
        if ((misaligned & (1u << f)) && ptr) set_pointer(&c.buffers, &c.logits_arg, f, (char *)ptr + by);
    }
    if (shorts & 1) c.buffers.sorted_token_ids_capacity -= 1 + (int64_t)take(in, 1);
    if (shorts & 2) c.buffers.expert_ids_capacity -= 1 + (int64_t)take(in, 1);
    if (shorts & 4) c.buffers.workspace_bytes -= 1 + take(in, 1) % (uint64_t)z.workspace.bytes;
    if (shorts & 8) c.buffers.struct_size = take(in, 1) % sizeof c.buffers;
    if (shorts & 16) c.buffers.sorted_token_ids_capacity = (int64_t)take(in, 8);
    if (shorts & 32) c.buffers.expert_ids_capacity = (int64_t)take(in, 8);

    for (int gpu = 0; gpu < 2; ++gpu) {
        const status_set wrong = call_violations(router_arg, p, &z, M, c.logits_arg, bp, gpu);
        snapshot snap;
        snapshot_take(&snap, &c, E, G);
        const alphamoe_status st = gpu ? alphamoe_route(router_arg, M, c.logits_arg, bp, NULL)
                                       : alphamoe_route_host(router_arg, M, c.logits_arg, bp);
        if (gpu || st != ALPHAMOE_OK) {
            /* With the driver hidden a valid GPU call ends at NO_DRIVER, but
             * where the kernels do not hold the flavour. */
            const status_set gpu_end =
                gpu_runs_flavour(p) ? S(ALPHAMOE_ERROR_NO_DRIVER) : S(ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR);
            const status_set allowed = wrong ? wrong : (gpu ? gpu_end : 0u);
            CHECK((allowed & S(st)) != 0, "%s: status %d (%s), allowed set 0x%x, M=%d",
                  gpu ? "alphamoe_route" : "alphamoe_route_host", (int)st, alphamoe_status_string(st), allowed, M);
            snapshot_expect_same(&snap, gpu ? "alphamoe_route" : "alphamoe_route_host");
            continue;
        }
        /* The inputs stay as they were. */
        CHECK(memcmp(snap.copy[F_LOGITS], c.logits, c.logits_bytes) == 0, "the logits were written");
        CHECK(memcmp(snap.copy[F_BIAS], c.bias, ((size_t)E + TEST_GUARD) * 4u) == 0, "the bias was written");
        CHECK(memcmp(snap.copy[F_MAP], c.map, ((size_t)G + TEST_GUARD) * 4u) == 0, "the expert map was written");
        CHECK(memcmp(snap.copy[F_TOKENS], c.tokens, snap.bytes[F_TOKENS]) == 0, "the token ids were written");
        CHECK(memcmp(snap.copy[F_TABLE], c.table, snap.bytes[F_TABLE]) == 0, "the hash table was written");
        CHECK(memcmp(snap.copy[F_L2P], c.l2p, snap.bytes[F_L2P]) == 0, "logical_to_physical was written");
        CHECK(memcmp(snap.copy[F_REPLICAS], c.replicas, snap.bytes[F_REPLICAS]) == 0, "replica_count was written");
        /* physical_load as it was before the call, for the expectation. */
        int32_t *load_before = (int32_t *)snap.copy[F_LOAD];
        snap.copy[F_LOAD] = NULL;
        snapshot_free(&snap);
        CHECK(wrong == 0, "alphamoe_route_host accepted a call with violations 0x%x", wrong);
        /* Optional outputs that were left out: compare them too, they must
         * still be poison. validate_plan and compare_plans read only the
         * ones that were passed. */
        host_plan got = c.plan;
        if (!c.buffers.expert_counts) got.expert_counts = NULL;
        if (!c.buffers.expert_offsets) got.expert_offsets = NULL;
        if (!c.buffers.pair_to_sorted) got.pair_to_sorted = NULL;
        got.buffers.expert_map = c.map;
        char why[512];
        CHECK(validate_plan(&got, M, why, sizeof why) == 0, "plan invalid: %s", why);
        /* The second implementation of the contract, from the fp32 values
         * of the logits. */
        if (p->flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) {
            const int load_given = bp->struct_size > offsetof(alphamoe_buffers, token_ids) && bp->physical_load != NULL;
            check_replicated(r, p, &c, &got, M, load_given, load_before);
        } else {
            host_plan want;
            CHECK(host_plan_alloc(&want, r, 1) == 0, "host_plan_alloc");
            host_plan_poison(&want);
            const flavour_call call = {p, M, c.values, c.bias, c.map, c.tokens, c.table};
            flavour_reference_route(&call, &want);
            CHECK(compare_plans(&want, &got, M, flavour_weight_tolerance(p), why, sizeof why) == 0,
                  "differs from the second implementation: %s (M=%d)", why, M);
            host_plan_free(&want);
            CHECK(memcmp(load_before, c.load, ((size_t)P + TEST_GUARD) * 4u) == 0, "physical_load written without the flag");
        }
        free(load_before);
        /* A second call on fresh poison: same bytes, and nothing outside the
         * live extents written (compare_plans checks both). */
        host_plan again;
        CHECK(host_plan_alloc(&again, r, 1) == 0, "host_plan_alloc");
        host_plan_poison(&again);
        host_plan again_view = again;
        if (!c.buffers.expert_counts) again_view.buffers.expert_counts = again_view.expert_counts = NULL;
        if (!c.buffers.expert_offsets) again_view.buffers.expert_offsets = again_view.expert_offsets = NULL;
        if (!c.buffers.pair_to_sorted) again_view.buffers.pair_to_sorted = again_view.pair_to_sorted = NULL;
        again_view.buffers.correction_bias = c.bias;
        again_view.buffers.expert_map = c.map;
        again_view.buffers.token_ids = c.tokens;
        again_view.buffers.hash_table = c.table;
        again_view.buffers.logical_to_physical = c.l2p;
        again_view.buffers.replica_count = c.replicas;
        /* No load: the plan must not depend on it, and the first call's
         * counts stay as checked. */
        again_view.buffers.physical_load = NULL;
        CHECK(alphamoe_route_host(r, M, c.logits_arg, &again_view.buffers) == ALPHAMOE_OK, "second call");
        CHECK(compare_plans(&got, &again_view, M, 0.0f, why, sizeof why) == 0, "second call differs: %s", why);
        /* The left-out optional outputs of the first call: untouched. */
        const int64_t opt_n[] = {z.expert_counts.elements, z.expert_offsets.elements, z.pair_to_sorted.elements};
        int32_t *opt[] = {c.plan.expert_counts, c.plan.expert_offsets, c.plan.pair_to_sorted};
        const int passed[] = {c.buffers.expert_counts != NULL, c.buffers.expert_offsets != NULL, c.buffers.pair_to_sorted != NULL};
        for (int o = 0; o < 3; ++o)
            for (int64_t i = 0; !passed[o] && i < opt_n[o] + TEST_GUARD; ++i)
                CHECK(opt[o][i] == TEST_POISON_I32, "optional output %d left out but written at %lld", o, (long long)i);
        host_plan_free(&again);
    }
    free(c.logits);
    free(c.values);
    free(c.bias);
    free(c.map);
    free(c.tokens);
    free(c.table);
    free(c.l2p);
    free(c.replicas);
    free(c.load);
    host_plan_free(&c.plan);
}

/* ------------------------------------------------------------ parameters */

/* A divisor of E near 1 + v % E (0 groups one time in four, 1 another). */
static int32_t fold_groups(uint32_t v, int32_t E) {
    if (v % 4 == 0) return 0;
    if (v % 4 == 1) return 1;
    int32_t g = 1 + (int32_t)((v / 4) % (uint32_t)E);
    while (E % g) --g;
    return g;
}

/* The routing flavours' fields, raw or folded into valid values for the
 * first-version fields already read (E, k and flags, which this may fix
 * up so that the set stays valid). */
static void read_flavour(alphamoe_params *p, reader *in, int *map_raw) {
    const uint8_t raw = (uint8_t)take(in, 1);
    const uint32_t scoring = (uint32_t)take(in, 4), type = (uint32_t)take(in, 4);
    const uint32_t groups = (uint32_t)take(in, 4), keep = (uint32_t)take(in, 4);
    const uint32_t scale = (uint32_t)take(in, 4), begin = (uint32_t)take(in, 4), count = (uint32_t)take(in, 4);
    const uint32_t reserved = (uint32_t)take(in, 4);
    const uint32_t vocab = (uint32_t)take(in, 4);
    const uint8_t raw2 = (uint8_t)take(in, 1);
    const uint32_t physical = (uint32_t)take(in, 4), slots = (uint32_t)take(in, 4);
    *map_raw = (raw & 128) != 0;
    const int32_t E = p->num_experts >= 1 && p->num_experts <= ALPHAMOE_MAX_EXPERTS ? p->num_experts : 1;
    /* Redundant experts: P and R raw, or folded to what the flag asks. R
     * stays at most 8 but for one value in two: the [E, R] table is read
     * from the input. */
    const int redundant = (p->flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) != 0;
    if (raw2 & 1) {
        p->num_physical_experts = (int32_t)physical;
        p->replica_slots = (int32_t)slots;
    } else if (redundant) {
        p->num_physical_experts = 1 + (int32_t)(physical % ALPHAMOE_MAX_EXPERTS);
        const uint32_t widest = (slots & 1) || p->num_physical_experts < 8 ? (uint32_t)p->num_physical_experts : 8u;
        p->replica_slots = 1 + (int32_t)((slots >> 1) % widest);
    } else {
        p->num_physical_experts = p->replica_slots = 0;
    }
    /* Expert parallelism folds over the experts the plan routes. */
    const int32_t G = !redundant ? E
                      : p->num_physical_experts >= 1 && p->num_physical_experts <= ALPHAMOE_MAX_EXPERTS ? p->num_physical_experts
                                                                                                         : 1;
    p->scoring = (raw & 1) ? (int32_t)scoring : (int32_t)(scoring % 3);
    p->logits_type = (raw & 2) ? (int32_t)type : (int32_t)(type % 3);
    if (raw & 4) {
        p->num_groups = (int32_t)groups;
        p->topk_groups = (int32_t)keep;
    } else {
        p->num_groups = fold_groups(groups, E);
        const int32_t g = p->num_groups > 1 ? p->num_groups : 1;
        int32_t kept = (int32_t)(keep % (uint32_t)(g + 1));
        while (kept > 0 && kept < g && (int64_t)kept * (E / g) < p->top_k) ++kept;
        p->topk_groups = kept;
    }
    if (raw & 8) {
        memcpy(&p->routed_scaling_factor, &scale, 4);
    } else {
        static const float table[] = {0.0f, 1.0f, 2.5f, 2.827f, 1e-30f, 3e38f, 0.5f};
        float x = table[scale % 8 < 7 ? scale % 8 : 0];
        if (scale % 8 == 7) {
            const uint32_t bits = (scale >> 3) & 0x7f7fffffu; /* positive and finite */
            memcpy(&x, &bits, 4);
        }
        p->routed_scaling_factor = x;
    }
    if (raw & 16) {
        p->local_expert_begin = (int32_t)begin;
        p->local_expert_count = (int32_t)count;
    } else {
        p->local_expert_begin = 0;
        p->local_expert_count = 0;
        p->flags &= ~ALPHAMOE_FLAG_EXPERT_MAP;
        switch (count % 3) {
        case 1:
            p->local_expert_count = 1 + (int32_t)((count / 3) % (uint32_t)G);
            p->local_expert_begin = (int32_t)(begin % (uint32_t)(G - p->local_expert_count + 1));
            break;
        case 2:
            p->local_expert_count = 1 + (int32_t)((count / 3) % (uint32_t)G);
            p->flags |= ALPHAMOE_FLAG_EXPERT_MAP;
            break;
        default: break;
        }
    }
    p->reserved = (raw & 32) ? reserved : 0u;
    p->reserved2 = (raw & 32) ? reserved >> 16 : 0u;
    /* Folded flags stay valid with the flavour: a bias needs a per-expert
     * score, the shared expert softmax without groups. */
    if (!(raw & 1)) {
        if (p->scoring == ALPHAMOE_SCORING_SOFTMAX) p->flags &= ~ALPHAMOE_FLAG_CORRECTION_BIAS;
        if (p->scoring != ALPHAMOE_SCORING_SOFTMAX || p->num_groups > 1) p->flags &= ~ALPHAMOE_FLAG_SHARED_EXPERT;
        if (p->num_groups > 1 || (p->flags & (ALPHAMOE_FLAG_CORRECTION_BIAS | ALPHAMOE_FLAG_SHARED_EXPERT)))
            p->flags &= ~ALPHAMOE_FLAG_HASH_ROUTING;
    }
    /* A vocabulary, raw, or folded to what the flag asks (small tables). */
    p->vocab_size = (raw & 64) ? (int32_t)vocab
                    : (p->flags & ALPHAMOE_FLAG_HASH_ROUTING) ? 1 + (int32_t)(vocab % 300u)
                                                              : 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* Before the library's first driver call: a valid GPU call must stop at
     * ALPHAMOE_ERROR_NO_DRIVER, never launch on the fuzzer's host buffers. */
    setenv("ALPHAMOE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader in = {data, size, 0};
    const uint8_t raw = (uint8_t)take(&in, 1);
    alphamoe_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    const uint32_t e = (uint32_t)take(&in, 4), k = (uint32_t)take(&in, 4), bm = (uint32_t)take(&in, 4);
    const uint32_t max = (uint32_t)take(&in, 4), flags = (uint32_t)take(&in, 4), spec = (uint32_t)take(&in, 4);
    const uint64_t stride = take(&in, 8);
    p.num_experts = (raw & 1) ? (int32_t)e : 1 + (int32_t)(e % ALPHAMOE_MAX_EXPERTS);
    const int32_t max_k = p.num_experts >= 1 && p.num_experts < ALPHAMOE_MAX_TOP_K ? p.num_experts : ALPHAMOE_MAX_TOP_K;
    p.top_k = (raw & 2) ? (int32_t)k : 1 + (int32_t)(k % (uint32_t)max_k);
    p.block_m = (raw & 4) ? (int32_t)bm : 1 + (int32_t)(bm % ALPHAMOE_MAX_BLOCK_M);
    p.flags = (raw & 16) ? flags : flags & ALPHAMOE_FLAG_ALL & (p.top_k >= 2 ? ~0u : ~ALPHAMOE_FLAG_SHARED_EXPERT);
    p.force_specialization = (raw & 32) ? (int32_t)spec : (int32_t)(spec % 4);
    p.logits_row_stride = (raw & 64) ? (int64_t)stride : (stride % 3 == 0 ? 0 : p.num_experts + (int64_t)(stride % 9));
    if (raw & 128) p.struct_size = take(&in, 1) % (sizeof p + 8);
    int map_raw = 0;
    const uint8_t large = (uint8_t)take(&in, 1);
    read_flavour(&p, &in, &map_raw);
    if (raw & 8) {
        p.max_tokens = (int32_t)max;
    } else if (large % 8 == 1) {
        /* As many tokens as buffers of FUZZ_MAX_BUFFER_ELEMENTS hold. */
        const int64_t row = p.logits_row_stride > 0 ? p.logits_row_stride : (p.num_experts > 0 ? p.num_experts : 1);
        const int64_t widest = row > p.top_k ? row : (p.top_k > 0 ? p.top_k : 1);
        p.max_tokens = (int32_t)(max % (uint32_t)(FUZZ_MAX_BUFFER_ELEMENTS / widest + 1));
    } else {
        p.max_tokens = (int32_t)(max % (FUZZ_MAX_TOKENS + 1));
    }

    const status_set wrong = create_violations(&p);
    const alphamoe_params before = p;
    alphamoe_router *r = (alphamoe_router *)&in; /* must stay as it is on failure */
    const alphamoe_status st = alphamoe_router_create(&p, &r);
    CHECK(memcmp(&p, &before, sizeof p) == 0, "create changed its input");
    if (st != ALPHAMOE_OK) {
        CHECK((wrong & S(st)) != 0,
              "create: status %d (%s) names nothing wrong (violations 0x%x; E %d k %d bm %d max %d stride %lld flags 0x%x "
              "spec %d size %zu scoring %d type %d groups %d/%d scale %g local %d+%d reserved %u)",
              (int)st, alphamoe_status_string(st), wrong, p.num_experts, p.top_k, p.block_m, p.max_tokens,
              (long long)p.logits_row_stride, p.flags, p.force_specialization, p.struct_size, p.scoring, p.logits_type,
              p.num_groups, p.topk_groups, (double)p.routed_scaling_factor, p.local_expert_begin, p.local_expert_count,
              p.reserved);
        CHECK(r == (alphamoe_router *)&in, "create wrote *out on failure");
        return 0;
    }
    CHECK(wrong == 0, "create accepted parameters with violations 0x%x", wrong);
    alphamoe_params got;
    memset(&got, 0, sizeof got);
    got.struct_size = sizeof got;
    CHECK(alphamoe_router_get_params(r, &got) == ALPHAMOE_OK, "get_params");
    const alphamoe_params want = normalized(&p);
    CHECK(memcmp(&got, &want, sizeof want) == 0, "get_params differs from the parameters given, normalized");
    fuzz_call(r, &want, map_raw, &in);
    alphamoe_router_destroy(r);
    return 0;
}
