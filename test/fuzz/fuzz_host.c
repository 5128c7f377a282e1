/* libFuzzer target over everything of the library that runs without a GPU:
 * parameter validation (alphamoe_router_create), sizing, the variant
 * selection, the argument checks of both routing entry points, and the host
 * reference with a plan validator behind it.
 *
 * The input is read as a parameter set, a call, buffer damage, device
 * attributes, then logit bits. Each field is either taken raw (any 32- or
 * 64-bit value, to hit the range checks) or folded into its valid range
 * (to reach the routing itself). Every outcome is checked against a model
 * written here from the header's words alone:
 *   - a status other than OK must name something that really is wrong, and
 *     nothing may be written (every buffer, guards included, compared byte
 *     for byte);
 *   - when nothing is wrong the call must succeed, and the plan must satisfy
 *     the contract: ids the k best by the ranking rule, weights within 4e-6
 *     of a double softmax and in [0, 1], a valid plan, nothing written past
 *     the live extents, the same bytes on a second call.
 * The GPU entry point is driven too, with the driver hidden, so that a call
 * that passes validation stops at ALPHAMOE_ERROR_NO_DRIVER before touching
 * anything. Any disagreement aborts, which libFuzzer reports as a crash. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alphamoe/router_diagnostics.h"
#include "test_support.h"

/* Routing runs only on inputs whose buffers stay small: the point is the
 * logic, not the memory bandwidth. */
#define FUZZ_MAX_TOKENS 64
#define FUZZ_MAX_BUFFER_ELEMENTS (1 << 20)

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

static int64_t model_capacity(int64_t pairs, int64_t E, int64_t bm) {
    const int64_t nonempty = pairs < E ? pairs : E;
    return (nonempty + (pairs - nonempty) / bm) * bm;
}

/* Every status alphamoe_router_create may give for p: each field that is
 * out of the range the header states. Empty: the parameters are valid. */
static status_set create_violations(const alphamoe_params *p) {
    /* A published size (the first version's, or this header's and above):
     * the fields past a first-version size read as zero. */
    const size_t first_version = offsetof(alphamoe_params, scoring);
    if (p->struct_size < first_version || (p->struct_size > first_version && p->struct_size < sizeof(alphamoe_params)))
        return S(ALPHAMOE_ERROR_STRUCT_SIZE);
    status_set v = 0;
    const int e_ok = p->num_experts >= 1 && p->num_experts <= ALPHAMOE_MAX_EXPERTS;
    if (!e_ok) v |= S(ALPHAMOE_ERROR_NUM_EXPERTS);
    const int k_ok = p->top_k >= 1 && p->top_k <= ALPHAMOE_MAX_TOP_K && (!e_ok || p->top_k <= p->num_experts);
    if (!k_ok) v |= S(ALPHAMOE_ERROR_TOP_K);
    const int bm_ok = p->block_m >= 1 && p->block_m <= ALPHAMOE_MAX_BLOCK_M;
    if (!bm_ok) v |= S(ALPHAMOE_ERROR_BLOCK_M);
    if (p->flags & ~ALPHAMOE_FLAG_ALL) v |= S(ALPHAMOE_ERROR_FLAGS);
    /* The routing flavours' fields stay zero here (softmax, no expert
     * parallelism): their flags alone are then errors. */
    if (p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) v |= S(ALPHAMOE_ERROR_SCORING);
    if (p->flags & ALPHAMOE_FLAG_EXPERT_MAP) v |= S(ALPHAMOE_ERROR_EXPERT_PARALLEL);
    if ((p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) && p->top_k < 2) v |= S(ALPHAMOE_ERROR_SHARED_EXPERT);
    if (p->force_specialization < 0 || p->force_specialization > 3) v |= S(ALPHAMOE_ERROR_SPECIALIZATION);
    if (p->max_tokens < 0) {
        v |= S(ALPHAMOE_ERROR_MAX_TOKENS);
    } else if (k_ok && e_ok && bm_ok) {
        const int64_t pairs = (int64_t)p->max_tokens * p->top_k;
        if (pairs > INT32_MAX || model_capacity(pairs, p->num_experts, p->block_m) > INT32_MAX)
            v |= S(ALPHAMOE_ERROR_MAX_TOKENS);
    }
    if (p->logits_row_stride < 0 || (p->logits_row_stride != 0 && e_ok && p->logits_row_stride < p->num_experts)) {
        v |= S(ALPHAMOE_ERROR_ROW_STRIDE);
    } else if (p->max_tokens >= 0) {
        /* The logits' byte extent must fit 64 bits. */
        const int64_t rows = p->max_tokens > 1 ? p->max_tokens : 1;
        const int64_t stride = p->logits_row_stride ? p->logits_row_stride : (e_ok ? p->num_experts : 1);
        if (stride > INT64_MAX / 4 / rows) v |= S(ALPHAMOE_ERROR_ROW_STRIDE);
    }
    return v;
}

/* ------------------------------------------------------------ one call */

enum { F_LOGITS, F_TOPK_IDS, F_TOPK_WEIGHTS, F_SORTED, F_EXPERT_IDS, F_NTPP, F_COUNTS, F_OFFSETS,
       F_PAIR_TO_SORTED, F_WORKSPACE, F_COUNT };

typedef struct call_setup {
    host_plan plan;
    float *logits;
    size_t logits_bytes;
    unsigned char *workspace_raw;
    size_t workspace_raw_bytes;
    alphamoe_buffers buffers;
    const float *logits_arg;
} call_setup;

static void *pointer_of(alphamoe_buffers *b, const float **logits, int f) {
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
    default: return b->workspace;
    }
}

static void set_pointer(alphamoe_buffers *b, const float **logits, int f, void *p) {
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
    default: b->workspace = p; break;
    }
}

/* What alphamoe_route_host (gpu = 0) or alphamoe_route (gpu = 1) may answer
 * for these arguments, from the header's rules. */
static status_set call_violations(const alphamoe_router *r, const alphamoe_params *p, const alphamoe_sizes *z,
                                  int32_t M, const float *logits, const alphamoe_buffers *b, int gpu) {
    if (r == NULL || b == NULL) return S(ALPHAMOE_ERROR_NULL_POINTER);
    const size_t first_version = offsetof(alphamoe_buffers, correction_bias);
    if (b->struct_size < first_version || (b->struct_size > first_version && b->struct_size < sizeof(alphamoe_buffers)))
        return S(ALPHAMOE_ERROR_STRUCT_SIZE);
    status_set v = 0;
    if (M < 0 || M > p->max_tokens) v |= S(ALPHAMOE_ERROR_NUM_TOKENS);
    if ((M > 0 && (!logits || !b->topk_ids || !b->topk_weights)) ||
        (z->sorted_token_ids.elements > 0 && (!b->sorted_token_ids || !b->expert_ids)) ||
        !b->num_tokens_post_padded || (gpu && !b->workspace))
        v |= S(ALPHAMOE_ERROR_NULL_POINTER);
    const void *word[] = {logits, b->topk_ids, b->topk_weights, b->sorted_token_ids, b->expert_ids,
                          b->num_tokens_post_padded, b->expert_counts, b->expert_offsets, b->pair_to_sorted};
    for (size_t i = 0; i < sizeof word / sizeof word[0]; ++i)
        if ((uintptr_t)word[i] % 4) v |= S(ALPHAMOE_ERROR_ALIGNMENT);
    if (gpu && (uintptr_t)b->workspace % (uintptr_t)z->workspace_alignment) v |= S(ALPHAMOE_ERROR_ALIGNMENT);
    if (b->sorted_token_ids_capacity < z->sorted_token_ids.elements || b->expert_ids_capacity < z->expert_ids.elements)
        v |= S(ALPHAMOE_ERROR_CAPACITY);
    if (gpu && b->workspace_bytes < (size_t)z->workspace.bytes) v |= S(ALPHAMOE_ERROR_WORKSPACE);
    return v;
}

/* Everything the call could write, with its guard: a copy to compare. */
typedef struct snapshot {
    const unsigned char *at[F_COUNT + 1];
    size_t bytes[F_COUNT + 1];
    unsigned char *copy[F_COUNT + 1];
} snapshot;

static void snapshot_take(snapshot *s, const call_setup *c) {
    const host_plan *pl = &c->plan;
    const alphamoe_sizes *z = &pl->sizes;
    const void *at[] = {c->logits, pl->topk_ids, pl->topk_weights, pl->sorted_token_ids, pl->expert_ids,
                        pl->num_tokens_post_padded, pl->expert_counts, pl->expert_offsets, pl->pair_to_sorted,
                        c->workspace_raw};
    const int64_t n[] = {0, z->topk_ids.elements, z->topk_weights.elements, z->sorted_token_ids.elements,
                         z->expert_ids.elements, 1, z->expert_counts.elements, z->expert_offsets.elements,
                         z->pair_to_sorted.elements, 0};
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

/* Section 3 written as a comparison of values: a ranks before b. */
static int ranks_before(float a, int32_t ia, float b, int32_t ib) {
    const int na = isnan(a) != 0, nb = isnan(b) != 0;
    if (na != nb) return nb;
    if (!na && a != b) return a > b;
    return ia < ib;
}

/* The ids are the best n_select candidates in order, the weights the
 * softmax of section 4 within 4e-6. */
static void check_choice(const alphamoe_params *p, int32_t M, const float *logits, int64_t stride,
                         const host_plan *pl) {
    const int32_t E = p->num_experts, k = p->top_k;
    const int shared = (p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) != 0;
    const int32_t candidates = shared ? E - 1 : E, n_select = shared ? k - 1 : k;
    for (int32_t t = 0; t < M; ++t) {
        const float *row = logits + (int64_t)t * stride;
        const int32_t *ids = pl->topk_ids + (int64_t)t * k;
        const float *w = pl->topk_weights + (int64_t)t * k;
        char chosen[ALPHAMOE_MAX_EXPERTS] = {0};
        for (int32_t j = 0; j < k; ++j) {
            CHECK(ids[j] >= 0 && ids[j] < E, "token %d slot %d id %d", t, j, ids[j]);
            CHECK(!chosen[ids[j]], "token %d: id %d twice", t, ids[j]);
            chosen[ids[j]] = 1;
        }
        if (shared) CHECK(ids[k - 1] == E - 1, "token %d: shared slot holds %d", t, ids[k - 1]);
        for (int32_t j = 0; j + 1 < n_select; ++j)
            CHECK(ranks_before(row[ids[j]], ids[j], row[ids[j + 1]], ids[j + 1]), "token %d: slots %d, %d out of order", t, j, j + 1);
        const int32_t last = ids[n_select - 1];
        for (int32_t e = 0; e < candidates; ++e)
            if (!chosen[e])
                CHECK(ranks_before(row[last], last, row[e], e), "token %d: expert %d left out but ranks before chosen %d", t, e, last);
        /* Section 4 in double. */
        double m = -INFINITY;
        int n_pos_inf = 0;
        for (int32_t j = 0; j < k; ++j) {
            const float x = row[ids[j]];
            if (!isnan(x) && x > m) m = x;
            n_pos_inf += x == INFINITY;
        }
        double sum = 0.0, ex[ALPHAMOE_MAX_TOP_K];
        for (int32_t j = 0; j < k; ++j) {
            const float x = row[ids[j]];
            if (m == INFINITY) ex[j] = x == INFINITY ? 1.0 : 0.0;
            else if (m == -INFINITY || isnan(x)) ex[j] = 0.0;
            else ex[j] = exp((double)x - m);
            sum += ex[j];
        }
        for (int32_t j = 0; j < k; ++j) {
            const double want = sum > 0.0 ? ex[j] / sum : 0.0;
            CHECK(isfinite(w[j]) && w[j] >= 0.0f && w[j] <= 1.0f, "token %d slot %d weight %g", t, j, (double)w[j]);
            CHECK(fabs(w[j] - want) <= 4e-6, "token %d slot %d weight %.9g, want %.9g", t, j, (double)w[j], want);
        }
        (void)n_pos_inf;
    }
}

static void check_sizes(const alphamoe_params *p, const alphamoe_sizes *z) {
    const int64_t pairs = (int64_t)p->max_tokens * p->top_k;
    const int64_t cap = model_capacity(pairs, p->num_experts, p->block_m);
    const alphamoe_extent *x[] = {&z->topk_ids, &z->topk_weights, &z->sorted_token_ids, &z->expert_ids,
                                  &z->num_tokens_post_padded, &z->expert_counts, &z->expert_offsets, &z->pair_to_sorted};
    const int64_t want[] = {pairs, pairs, cap, cap / p->block_m, 1, p->num_experts, p->num_experts + 1, pairs};
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
    if (mode & 16) d.struct_size = take(in, 1) % sizeof d;

    int has_image = 0;
    for (size_t i = 0; i < sizeof kImageArchs / sizeof kImageArchs[0]; ++i) has_image |= kImageArchs[i] == d.compute_capability;
    const int sane = d.struct_size >= sizeof d && has_image && d.multiprocessor_count >= 1 && d.cooperative_ctas_per_sm >= 0;
    const int can_cooperate = d.cooperative_launch != 0 && d.cooperative_ctas_per_sm >= 1;
    const int forced_grid = p->force_specialization >= ALPHAMOE_SPECIALIZATION_SMALL;
    const int m_ok = M >= 0 && M <= p->max_tokens;
    /* A forced large grid whose group sums cannot hold the call is refused
     * (over a billion pairs on 132 SMs; the library's own choice falls back
     * to small). */
    const int large_refused = p->force_specialization == ALPHAMOE_SPECIALIZATION_LARGE && sane && can_cooperate &&
                              !large_grid_holds(M, d.multiprocessor_count, p->top_k);

    alphamoe_selection s, before;
    memset(&s, 0xA5, sizeof s);
    s.struct_size = sizeof s;
    before = s;
    const alphamoe_status st = alphamoe_router_select(r, M, &d, &s);
    if (st != ALPHAMOE_OK) {
        const status_set allowed = S(ALPHAMOE_ERROR_STRUCT_SIZE) * (d.struct_size < sizeof d) |
                                   S(ALPHAMOE_ERROR_NUM_TOKENS) * !m_ok |
                                   S(ALPHAMOE_ERROR_NO_IMAGE) * !has_image |
                                   S(ALPHAMOE_ERROR_INVALID_ARGUMENT) * !sane |
                                   S(ALPHAMOE_ERROR_UNSUPPORTED_DEVICE) * ((forced_grid && !can_cooperate) || large_refused);
        CHECK((allowed & S(st)) != 0, "select: status %d names nothing wrong (cc %d SMs %d occ %d coop %d M %d)", (int)st,
              d.compute_capability, d.multiprocessor_count, d.cooperative_ctas_per_sm, d.cooperative_launch, M);
        CHECK(memcmp(&s, &before, sizeof s) == 0, "select wrote its output on failure");
        return;
    }
    CHECK(m_ok && sane && (!forced_grid || can_cooperate) && !large_refused,
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
}

/* Builds guarded buffers for r, damages them as the input says, calls both
 * entry points and checks the outcome. */
static void fuzz_call(const alphamoe_router *r, const alphamoe_params *p, reader *in) {
    alphamoe_sizes z;
    memset(&z, 0, sizeof z);
    z.struct_size = sizeof z;
    CHECK(alphamoe_router_sizes(r, &z) == ALPHAMOE_OK, "sizes of a valid router");
    check_sizes(p, &z);

    const uint8_t mode = (uint8_t)take(in, 1);
    const uint32_t m_raw = (uint32_t)take(in, 4);
    const int32_t M = (mode & 1) ? (int32_t)m_raw : (int32_t)(m_raw % ((uint32_t)p->max_tokens + 1u));
    check_select(r, p, M, in);

    const int64_t stride = p->logits_row_stride;
    const int64_t rows = p->max_tokens > 0 ? p->max_tokens : 1;
    if (z.sorted_token_ids.elements > FUZZ_MAX_BUFFER_ELEMENTS || z.topk_ids.elements > FUZZ_MAX_BUFFER_ELEMENTS ||
        stride > FUZZ_MAX_BUFFER_ELEMENTS / rows)
        return; /* validated and sized: too big to route here */

    call_setup c;
    memset(&c, 0, sizeof c);
    CHECK(host_plan_alloc(&c.plan, r, 1) == 0, "host_plan_alloc");
    host_plan_poison(&c.plan);
    c.logits_bytes = (size_t)(rows * stride) * 4u;
    c.logits = malloc(c.logits_bytes);
    CHECK(c.logits != NULL, "out of memory");
    /* The rest of the input is the logits' bits, repeated as needed. */
    const size_t left = in->size - in->at;
    for (int64_t i = 0; i < rows * stride; ++i) {
        uint32_t bits = 0;
        for (int b = 0; b < 4; ++b)
            bits |= (uint32_t)(left ? in->data[in->at + ((size_t)i * 4 + (size_t)b) % left] : (uint8_t)(i * 37 + b)) << (8 * b);
        memcpy(&c.logits[i], &bits, 4);
    }
    c.workspace_raw_bytes = (size_t)z.workspace.bytes + 64;
    c.workspace_raw = aligned_alloc(64, c.workspace_raw_bytes);
    CHECK(c.workspace_raw != NULL, "out of memory");
    memset(c.workspace_raw, 0, c.workspace_raw_bytes);
    c.buffers = c.plan.buffers;
    c.buffers.workspace = c.workspace_raw;
    c.buffers.workspace_bytes = (size_t)z.workspace.bytes;
    c.logits_arg = c.logits;

    /* Damage: NULL pointers, misaligned pointers, short capacities, a short
     * struct. Optional outputs left out (NULL) are no damage at all. */
    const uint16_t nulls = (uint16_t)take(in, 2);
    const uint16_t misaligned = (uint16_t)take(in, 2);
    const uint8_t shorts = (uint8_t)take(in, 1);
    /* Word pointers move by 1 to 3 bytes, never a whole element, so that an
     * accepted call still writes where the plan's arrays are. */
    const uint8_t by_raw = (uint8_t)take(in, 1);
    const alphamoe_router *router_arg = (mode & 2) && (shorts & 0x80) ? NULL : r;
    alphamoe_buffers *bp = (mode & 4) && (shorts & 0x40) ? NULL : &c.buffers;
    for (int f = 0; f < F_COUNT; ++f) {
        if (nulls & (1u << f)) set_pointer(&c.buffers, &c.logits_arg, f, NULL);
        void *ptr = pointer_of(&c.buffers, &c.logits_arg, f);
        const size_t by = f == F_WORKSPACE ? 1u + by_raw % 15u : 1u + by_raw % 3u;
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
        snapshot_take(&snap, &c);
        const alphamoe_status st = gpu ? alphamoe_route(router_arg, M, c.logits_arg, bp, NULL)
                                       : alphamoe_route_host(router_arg, M, c.logits_arg, bp);
        if (gpu || st != ALPHAMOE_OK) {
            /* With the driver hidden a valid GPU call ends at NO_DRIVER. */
            const status_set allowed = wrong ? wrong : (gpu ? S(ALPHAMOE_ERROR_NO_DRIVER) : 0u);
            CHECK((allowed & S(st)) != 0, "%s: status %d (%s), allowed set 0x%x, M=%d",
                  gpu ? "alphamoe_route" : "alphamoe_route_host", (int)st, alphamoe_status_string(st), allowed, M);
            snapshot_expect_same(&snap, gpu ? "alphamoe_route" : "alphamoe_route_host");
            continue;
        }
        for (int f = 0; f < F_COUNT; ++f) free(snap.copy[f]);
        CHECK(wrong == 0, "alphamoe_route_host accepted a call with violations 0x%x", wrong);
        /* Optional outputs that were left out: compare them too, they must
         * still be poison. validate_plan and compare_plans read only the
         * ones that were passed. */
        host_plan got = c.plan;
        if (!c.buffers.expert_counts) got.expert_counts = NULL;
        if (!c.buffers.expert_offsets) got.expert_offsets = NULL;
        if (!c.buffers.pair_to_sorted) got.pair_to_sorted = NULL;
        char why[512];
        CHECK(validate_plan(&got, M, why, sizeof why) == 0, "plan invalid: %s", why);
        if (M > 0) check_choice(p, M, c.logits_arg, stride, &got);
        /* A second call on fresh poison: same bytes, and nothing outside the
         * live extents written (compare_plans checks both). */
        host_plan again;
        CHECK(host_plan_alloc(&again, r, 1) == 0, "host_plan_alloc");
        host_plan_poison(&again);
        host_plan again_view = again;
        if (!c.buffers.expert_counts) again_view.buffers.expert_counts = again_view.expert_counts = NULL;
        if (!c.buffers.expert_offsets) again_view.buffers.expert_offsets = again_view.expert_offsets = NULL;
        if (!c.buffers.pair_to_sorted) again_view.buffers.pair_to_sorted = again_view.pair_to_sorted = NULL;
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
    free(c.workspace_raw);
    free(c.logits);
    host_plan_free(&c.plan);
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
    const int32_t max_k = p.num_experts >= 1 && p.num_experts < 16 ? p.num_experts : 16;
    p.top_k = (raw & 2) ? (int32_t)k : 1 + (int32_t)(k % (uint32_t)max_k);
    p.block_m = (raw & 4) ? (int32_t)bm : 1 + (int32_t)(bm % ALPHAMOE_MAX_BLOCK_M);
    p.max_tokens = (raw & 8) ? (int32_t)max : (int32_t)(max % (FUZZ_MAX_TOKENS + 1));
    /* The model checks renormalized softmax weights: NO_RENORMALIZE stays off. */
    const uint32_t first_version_flags = ALPHAMOE_FLAG_SHARED_EXPERT | ALPHAMOE_FLAG_TAIL_FILL | ALPHAMOE_FLAG_PDL;
    p.flags = (raw & 16) ? flags & ~ALPHAMOE_FLAG_NO_RENORMALIZE
                         : flags & first_version_flags & (p.top_k >= 2 ? ~0u : ~ALPHAMOE_FLAG_SHARED_EXPERT);
    p.force_specialization = (raw & 32) ? (int32_t)spec : (int32_t)(spec % 4);
    p.logits_row_stride = (raw & 64) ? (int64_t)stride : (stride % 3 == 0 ? 0 : p.num_experts + (int64_t)(stride % 9));
    if (raw & 128) p.struct_size = take(&in, 1) % (sizeof p + 8);

    const status_set wrong = create_violations(&p);
    const alphamoe_params before = p;
    alphamoe_router *r = (alphamoe_router *)&in; /* must stay as it is on failure */
    const alphamoe_status st = alphamoe_router_create(&p, &r);
    CHECK(memcmp(&p, &before, sizeof p) == 0, "create changed its input");
    if (st != ALPHAMOE_OK) {
        CHECK((wrong & S(st)) != 0, "create: status %d (%s) names nothing wrong (violations 0x%x; E %d k %d bm %d max %d stride %lld flags 0x%x spec %d size %zu)",
              (int)st, alphamoe_status_string(st), wrong, p.num_experts, p.top_k, p.block_m, p.max_tokens,
              (long long)p.logits_row_stride, p.flags, p.force_specialization, p.struct_size);
        CHECK(r == (alphamoe_router *)&in, "create wrote *out on failure");
        return 0;
    }
    CHECK(wrong == 0, "create accepted parameters with violations 0x%x", wrong);
    alphamoe_params got;
    memset(&got, 0, sizeof got);
    got.struct_size = sizeof got;
    CHECK(alphamoe_router_get_params(r, &got) == ALPHAMOE_OK, "get_params");
    if (p.logits_row_stride == 0) p.logits_row_stride = p.num_experts;
    p.struct_size = sizeof p;
    /* get_params resolves the flavour fields' zeros. */
    p.num_groups = 1;
    p.topk_groups = 1;
    p.routed_scaling_factor = 1.0f;
    p.local_expert_count = p.num_experts;
    CHECK(memcmp(&got, &p, sizeof p) == 0, "get_params differs from the parameters given");
    fuzz_call(r, &p, &in);
    alphamoe_router_destroy(r);
    return 0;
}
