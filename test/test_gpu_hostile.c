/* Hostile input on the GPU entry point with real device memory: every bad
 * argument, alone and several at once, gets a status that names it, and no
 * byte of any output, guard or workspace changes (all poisoned before, read
 * back and compared after). Optional outputs left out are skipped while the
 * rest stay exact; logits only 4-byte aligned with odd row strides route
 * exactly; rows of every IEEE bit class route exactly, on every
 * specialization. Each case is its own meson test; 77 without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_plan.h"
#include "logit_classes.h"
#include "test_support.h"

#define WORKSPACE_POISON 0xC3

/* ------------------------------------------------------------ damage */

/* One kind of bad argument. apply() changes the call and returns the status
 * that names it. */
enum {
    DAMAGE_ROUTER_NULL,
    DAMAGE_BUFFERS_NULL,
    DAMAGE_STRUCT_SIZE,
    DAMAGE_NUM_TOKENS,
    DAMAGE_LOGITS_NULL,
    DAMAGE_TOPK_IDS_NULL,
    DAMAGE_TOPK_WEIGHTS_NULL,
    DAMAGE_SORTED_NULL,
    DAMAGE_EXPERT_IDS_NULL,
    DAMAGE_NTPP_NULL,
    DAMAGE_WORKSPACE_NULL,
    DAMAGE_MISALIGN_LOGITS,
    DAMAGE_MISALIGN_OUTPUT, /* any of the eight outputs, optional ones included */
    DAMAGE_MISALIGN_WORKSPACE,
    DAMAGE_SORTED_CAPACITY,
    DAMAGE_EXPERT_IDS_CAPACITY,
    DAMAGE_WORKSPACE_BYTES,
    DAMAGE_KINDS
};

static const char *const kDamageNames[DAMAGE_KINDS] = {
    "router NULL", "buffers NULL", "buffers struct_size too small", "num_tokens out of range", "logits NULL",
    "topk_ids NULL", "topk_weights NULL", "sorted_token_ids NULL", "expert_ids NULL", "num_tokens_post_padded NULL",
    "workspace NULL", "logits misaligned", "an output misaligned", "workspace misaligned",
    "sorted_token_ids_capacity short", "expert_ids_capacity short", "workspace_bytes short"};

typedef struct call {
    const alphamoe_router *router;
    int32_t M;
    const float *logits;
    alphamoe_buffers buffers;
    int buffers_null;
} call;

static alphamoe_status apply_damage(int kind, call *c, const alphamoe_params *p, const alphamoe_sizes *z,
                                    test_rng *rng) {
    alphamoe_buffers *b = &c->buffers;
    const size_t by = 1 + rng_below(rng, 3);
    switch (kind) {
    case DAMAGE_ROUTER_NULL: c->router = NULL; return ALPHAMOE_ERROR_NULL_POINTER;
    case DAMAGE_BUFFERS_NULL: c->buffers_null = 1; return ALPHAMOE_ERROR_NULL_POINTER;
    case DAMAGE_STRUCT_SIZE: {
        /* Below this header's size, but never an earlier version's, which
         * is valid (and would route with the poisoned workspace). */
        const size_t first_version = offsetof(alphamoe_buffers, correction_bias);
        const size_t v2 = offsetof(alphamoe_buffers, token_ids);
        do b->struct_size = rng_below(rng, (uint32_t)sizeof *b);
        while (b->struct_size == first_version || b->struct_size == v2);
        return ALPHAMOE_ERROR_STRUCT_SIZE;
    }
    case DAMAGE_NUM_TOKENS: {
        const int32_t bad[] = {-1, INT32_MIN, p->max_tokens + 1, INT32_MAX};
        c->M = bad[rng_below(rng, 4)];
        return ALPHAMOE_ERROR_NUM_TOKENS;
    }
    case DAMAGE_LOGITS_NULL: c->logits = NULL; return ALPHAMOE_ERROR_NULL_POINTER;
    case DAMAGE_TOPK_IDS_NULL: b->topk_ids = NULL; return ALPHAMOE_ERROR_NULL_POINTER;
    case DAMAGE_TOPK_WEIGHTS_NULL: b->topk_weights = NULL; return ALPHAMOE_ERROR_NULL_POINTER;
    case DAMAGE_SORTED_NULL: b->sorted_token_ids = NULL; return ALPHAMOE_ERROR_NULL_POINTER;
    case DAMAGE_EXPERT_IDS_NULL: b->expert_ids = NULL; return ALPHAMOE_ERROR_NULL_POINTER;
    case DAMAGE_NTPP_NULL: b->num_tokens_post_padded = NULL; return ALPHAMOE_ERROR_NULL_POINTER;
    case DAMAGE_WORKSPACE_NULL: b->workspace = NULL; return ALPHAMOE_ERROR_NULL_POINTER;
    case DAMAGE_MISALIGN_LOGITS: c->logits = (const float *)((const char *)c->logits + by); return ALPHAMOE_ERROR_ALIGNMENT;
    case DAMAGE_MISALIGN_OUTPUT: {
        int32_t **fields[] = {&b->topk_ids, &b->sorted_token_ids, &b->expert_ids, &b->num_tokens_post_padded,
                              &b->expert_counts, &b->expert_offsets, &b->pair_to_sorted};
        const uint32_t f = rng_below(rng, 8);
        if (f == 7) b->topk_weights = (float *)((char *)b->topk_weights + by);
        else *fields[f] = (int32_t *)((char *)*fields[f] + by);
        return ALPHAMOE_ERROR_ALIGNMENT;
    }
    case DAMAGE_MISALIGN_WORKSPACE: {
        static const size_t offsets[] = {1, 2, 4, 8, 12};
        b->workspace = (char *)b->workspace + offsets[rng_below(rng, 5)];
        return ALPHAMOE_ERROR_ALIGNMENT;
    }
    case DAMAGE_SORTED_CAPACITY: {
        const int64_t bad[] = {z->sorted_token_ids.elements - 1, -1, INT64_MIN, 0};
        b->sorted_token_ids_capacity = bad[rng_below(rng, z->sorted_token_ids.elements > 0 ? 4 : 3)];
        return ALPHAMOE_ERROR_CAPACITY;
    }
    case DAMAGE_EXPERT_IDS_CAPACITY: {
        const int64_t bad[] = {z->expert_ids.elements - 1, -1, INT64_MIN, 0};
        b->expert_ids_capacity = bad[rng_below(rng, z->expert_ids.elements > 0 ? 4 : 3)];
        return ALPHAMOE_ERROR_CAPACITY;
    }
    default:
        b->workspace_bytes = rng_below(rng, 2) ? (size_t)z->workspace.bytes - 1 : rng_below(rng, (uint32_t)z->workspace.bytes);
        return ALPHAMOE_ERROR_WORKSPACE;
    }
}

/* A valid call, then `kinds` damages drawn at random; the status must be
 * one of theirs and nothing on the device may change. */
static void expect_rejected(case_inputs *in, const route_case *rc, device_plan *d, const int *kinds, int n_kinds,
                            test_rng *rng) {
    call c = {in->router, rc->M, in->device_logits, d->buffers, 0};
    uint32_t allowed = 0;
    char what[256] = "";
    for (int i = 0; i < n_kinds; ++i) {
        allowed |= 1u << apply_damage(kinds[i], &c, &d->mirror.params, &d->mirror.sizes, rng);
        strncat(what, kDamageNames[kinds[i]], sizeof what - strlen(what) - 1);
        if (i + 1 < n_kinds) strncat(what, " + ", sizeof what - strlen(what) - 1);
    }
    const alphamoe_status s = alphamoe_route(c.router, c.M, c.logits, c.buffers_null ? NULL : &c.buffers, NULL);
    CUDA_OK(cudaDeviceSynchronize());
    char desc[256];
    describe(rc, desc, sizeof desc);
    if (!(allowed & (1u << s)))
        fail_msg("%s (M=%d) [%s]: got %s, which names none of the bad arguments", what, c.M, desc, alphamoe_status_string(s));
    device_plan_read(d, 0);
    char label[512];
    snprintf(label, sizeof label, "%s [%s], status %s", what, desc, alphamoe_status_string(s));
    device_plan_expect_poisoned(d, label);
    device_plan_expect_workspace(d, WORKSPACE_POISON, label);
}

static int damage_applies(int kind, const route_case *rc, const device_plan *d) {
    /* Token-shaped pointers may be NULL for an empty batch; a plan sized for
     * no pairs may have NULL plan arrays. */
    if (rc->M == 0 && (kind == DAMAGE_LOGITS_NULL || kind == DAMAGE_TOPK_IDS_NULL || kind == DAMAGE_TOPK_WEIGHTS_NULL))
        return 0;
    if (d->mirror.sizes.sorted_token_ids.elements == 0 && (kind == DAMAGE_SORTED_NULL || kind == DAMAGE_EXPERT_IDS_NULL))
        return 0;
    return 1;
}

static void hostile_shape(route_case *rc, test_rng *rng, int i) {
    static const int32_t shapes[][3] = {{512, 10, 8}, {64, 6, 16}, {257, 16, 3}, {8, 2, 256}, {1, 1, 1}, {128, 8, 64}};
    static const int32_t tokens[] = {0, 1, 9, 100, 700, 3000};
    const int s = i % COUNT(shapes);
    const uint32_t flags = (rng_below(rng, 2) ? ALPHAMOE_FLAG_TAIL_FILL : 0u) | (rng_below(rng, 2) ? ALPHAMOE_FLAG_PDL : 0u) |
                           (shapes[s][1] >= 2 && rng_below(rng, 2) ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u);
    const route_case c = {shapes[s][0], shapes[s][1], shapes[s][2], tokens[(i / 2) % COUNT(tokens)],
                          tokens[(i / 2) % COUNT(tokens)] + (int32_t)rng_below(rng, 50), flags,
                          (int32_t)rng_below(rng, 4), LOGITS_RANDOM, 0, 1, 0};
    *rc = c;
}

/* Each bad argument alone, then the same device buffers route correctly:
 * the rejection was caused by that one change. */
static void gpu_hostile_each_bad_argument(void **state) {
    (void)state;
    test_rng rng = case_rng(0x4801);
    int rejected = 0;
    for (int i = 0; i < 12; ++i) {
        route_case rc;
        hostile_shape(&rc, &rng, i);
        case_inputs in;
        inputs_make(&in, &rc, &rng);
        device_plan d;
        device_plan_alloc(&d, in.router, 1);
        device_plan_poison(&d, 0);
        device_plan_fill_workspace(&d, WORKSPACE_POISON);
        for (int kind = 0; kind < DAMAGE_KINDS; ++kind)
            for (int rep = 0; rep < 3; ++rep) {
                if (!damage_applies(kind, &rc, &d)) continue;
                expect_rejected(&in, &rc, &d, &kind, 1, &rng);
                ++rejected;
            }
        device_plan_zero_workspace(&d);
        route_on(&in, &rc, &d, 0);
        device_plan_read(&d, 0);
        check_against(&in.expected, &d, &rc, "the undamaged call after the rejections");
        device_plan_free(&d);
        inputs_free(&in);
    }
    print_message("# %d rejected calls, nothing written on the device\n", rejected);
}

/* Two to five different bad arguments at once. */
static void gpu_hostile_combinations(void **state) {
    (void)state;
    test_rng rng = case_rng(0x4802);
    int rejected = 0;
    for (int i = 0; i < 6; ++i) {
        route_case rc;
        hostile_shape(&rc, &rng, i * 2 + 1);
        case_inputs in;
        inputs_make(&in, &rc, &rng);
        device_plan d;
        device_plan_alloc(&d, in.router, 1);
        device_plan_poison(&d, 0);
        device_plan_fill_workspace(&d, WORKSPACE_POISON);
        for (int rep = 0; rep < 60; ++rep) {
            /* Distinct kinds: one kind twice can cancel itself (two
             * misalignments adding up to an aligned pointer) and route with
             * the poisoned workspace. */
            int kinds[5], n = 2 + (int)rng_below(&rng, 4);
            for (int j = 0; j < n; ++j) {
                int repeated;
                do {
                    kinds[j] = (int)rng_below(&rng, DAMAGE_KINDS);
                    repeated = 0;
                    for (int i = 0; i < j; ++i) repeated |= kinds[i] == kinds[j];
                } while (repeated || !damage_applies(kinds[j], &rc, &d));
            }
            expect_rejected(&in, &rc, &d, kinds, n, &rng);
            ++rejected;
        }
        device_plan_free(&d);
        inputs_free(&in);
    }
    print_message("# %d calls with several bad arguments, nothing written on the device\n", rejected);
}

/* Each subset of the three optional outputs: the ones passed are exact, the
 * ones left out (NULL) stay poisoned on the device. */
static void gpu_hostile_optional_subsets(void **state) {
    (void)state;
    test_rng rng = case_rng(0x4803);
    int cases = 0;
    for (int force = 0; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force)
        for (int subset = 0; subset < 8; ++subset) {
            static const int32_t tokens[] = {5, 300, 2500};
            route_case rc = {512, 10, 8, tokens[(force + subset) % 3], 0,
                             subset % 2 ? ALPHAMOE_FLAG_TAIL_FILL : 0u, force, LOGITS_QUANTIZED, 0, 1, 0};
            case_inputs in;
            inputs_make(&in, &rc, &rng);
            device_plan d;
            device_plan_alloc(&d, in.router, 1);
            device_plan_poison(&d, 0);
            alphamoe_buffers b = d.buffers;
            if (!(subset & 1)) b.expert_counts = NULL;
            if (!(subset & 2)) b.expert_offsets = NULL;
            if (!(subset & 4)) b.pair_to_sorted = NULL;
            ROUTE_OK(alphamoe_route(in.router, rc.M, in.device_logits, &b, NULL));
            CUDA_OK(cudaDeviceSynchronize());
            device_plan_read(&d, 0);
            /* Compare what was passed; then the left-out arrays must be poison. */
            device_plan view = d;
            if (!b.expert_counts) view.mirror.expert_counts = NULL;
            if (!b.expert_offsets) view.mirror.expert_offsets = NULL;
            if (!b.pair_to_sorted) view.mirror.pair_to_sorted = NULL;
            check_against(&in.expected, &view, &rc, "optional outputs subset");
            const alphamoe_sizes *z = &d.mirror.sizes;
            const int32_t *left_out[] = {b.expert_counts ? NULL : d.mirror.expert_counts,
                                         b.expert_offsets ? NULL : d.mirror.expert_offsets,
                                         b.pair_to_sorted ? NULL : d.mirror.pair_to_sorted};
            const int64_t n[] = {z->expert_counts.elements, z->expert_offsets.elements, z->pair_to_sorted.elements};
            for (int o = 0; o < 3; ++o)
                for (int64_t e = 0; left_out[o] && e < n[o] + TEST_GUARD; ++e)
                    if (left_out[o][e] != TEST_POISON_I32)
                        fail_msg("subset %d, specialization %d: optional output %d left out but written at %" PRId64,
                                 subset, force, o, e);
            device_plan_free(&d);
            inputs_free(&in);
            ++cases;
        }
    print_message("# %d subsets of optional outputs x specializations\n", cases);
}

/* Logits 4- but not 16-byte aligned (offsets of 1 to 3 floats) with odd row
 * strides, through every specialization. */
static void gpu_hostile_alignment_and_stride(void **state) {
    (void)state;
    test_rng rng = case_rng(0x4804);
    static const int32_t shapes[][3] = {{512, 10, 8}, {257, 8, 64}, {61, 5, 16}, {3, 2, 1}};
    static const int32_t tokens[] = {1, 77, 1500};
    int cases = 0;
    for (int s = 0; s < COUNT(shapes); ++s)
        for (int t = 0; t < COUNT(tokens); ++t)
            for (int offset = 1; offset <= 3; ++offset) {
                const int64_t E = shapes[s][0];
                const int64_t strides[] = {E + 1, E + 2, E + 3, 2 * E + 1, E + 5};
                route_case rc = {shapes[s][0], shapes[s][1], shapes[s][2], tokens[t], 0,
                                 (t + offset) % 2 ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u, (s + t + offset) % 4,
                                 LOGITS_RANDOM, strides[(s + t + offset) % 5], 1, offset};
                if (rc.k < 2) rc.flags = 0;
                run_case(&rc, &rng);
                ++cases;
            }
    print_message("# %d cases with logits offset by 1-3 floats and odd strides\n", cases);
}

/* Routes rc with every row of bit class cls (ROW_CLASS_COUNT: the
 * pattern's rows of mixed classes) and checks the plan, valid and equal to
 * the host reference; `what` names the test in a failure. */
static void check_rows_of_class(const route_case *rc, int cls, test_rng *rng, const char *what) {
    case_inputs in;
    inputs_make(&in, rc, rng);
    if (cls < ROW_CLASS_COUNT) {
        for (int32_t t = 0; t < rc->M; ++t)
            fill_row_of_class(rng, in.logits + (int64_t)t * in.stride, rc->E, (logit_row_class)cls);
        inputs_update(&in, rc);
    }
    snprintf(gpu_case_label, sizeof gpu_case_label, "%s, rows %s", what,
             cls < ROW_CLASS_COUNT ? logit_row_class_name((logit_row_class)cls) : "of mixed classes");
    device_plan d;
    device_plan_alloc(&d, in.router, rc->with_optional);
    device_plan_poison(&d, 0);
    route_on(&in, rc, &d, 0);
    device_plan_read(&d, 0);
    char why[512];
    if (validate_plan(&d.mirror, rc->M, why, sizeof why)) fail_msg("%s: device plan invalid: %s", gpu_case_label, why);
    check_against(&in.expected, &d, rc, what);
    device_plan_free(&d);
    inputs_free(&in);
}

/* Rows of each bit class alone (every row of a batch the same class), then
 * mixed rows, through every specialization, routed and shared. */
static void gpu_hostile_logit_classes(void **state) {
    (void)state;
    test_rng rng = case_rng(0x4805);
    static const int32_t shapes[][3] = {{512, 10, 8}, {64, 8, 16}, {16, 16, 1}, {2, 2, 256}, {257, 4, 3}};
    static const int32_t tokens[] = {3, 200, 2000};
    int cases = 0;
    for (int cls = 0; cls <= ROW_CLASS_COUNT; ++cls)
        for (int s = 0; s < COUNT(shapes); ++s)
            for (int force = 0; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force) {
                const int shared = shapes[s][1] >= 2 && (cls + force) % 2;
                const route_case rc = {shapes[s][0], shapes[s][1], shapes[s][2], tokens[(cls + s + force) % 3], 0,
                                       (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u) | ALPHAMOE_FLAG_TAIL_FILL, force,
                                       LOGITS_ROW_CLASSES, 0, 1, 0};
                check_rows_of_class(&rc, cls, &rng, "bit-class rows");
                ++cases;
            }
    gpu_case_label[0] = '\0';
    print_message("# %d cases: %d row classes alone and mixed, every specialization\n", cases, ROW_CLASS_COUNT);
}

/* One token of each bit class, where the tiny kernel ranks it with the
 * whole CTA (rows of 129 to 512 experts: one_token_select.cuh; routed wide
 * rows: kernels/wide.cu) or with a warp, routed and shared: the CTA
 * ranking steps aside for rows its bound cannot serve (every logit -inf or
 * NaN, more than 32 candidates; in the wide kernels more than 64, or a row
 * of fewer than 64 experts, whose bound gathers it whole), and the token
 * must come out the same either way. */
static void gpu_hostile_one_token_classes(void **state) {
    (void)state;
    test_rng rng = case_rng(0x4806);
    static const int32_t shapes[][3] = {{512, 10, 8}, {384, 8, 64}, {257, 16, 3}, {256, 8, 64},  {200, 10, 8},
                                        {160, 6, 16}, {129, 4, 1},  {128, 8, 64}, {2048, 32, 8}, {896, 16, 64},
                                        {513, 17, 1}, {100, 20, 3}, {40, 32, 16}};
    int cases = 0;
    for (int cls = 0; cls <= ROW_CLASS_COUNT; ++cls)
        for (int s = 0; s < COUNT(shapes); ++s)
            for (int shared = 0; shared < 2; ++shared) {
                const route_case rc = {shapes[s][0], shapes[s][1], shapes[s][2], 1, 1 + (cls + s) % 5,
                                       (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u) |
                                           ((cls + s) % 2 ? ALPHAMOE_FLAG_TAIL_FILL : 0u),
                                       0, LOGITS_ROW_CLASSES, 0, (cls + shared) % 2, 0};
                check_rows_of_class(&rc, cls, &rng, "one-token rows");
                ++cases;
            }
    gpu_case_label[0] = '\0';
    print_message("# %d one-token cases: %d row classes and a mixed one, rows of 40 to 2048\n", cases, ROW_CLASS_COUNT);
}

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_hostile_each_bad_argument),
        cmocka_unit_test(gpu_hostile_combinations),
        cmocka_unit_test(gpu_hostile_optional_subsets),
        cmocka_unit_test(gpu_hostile_alignment_and_stride),
        cmocka_unit_test(gpu_hostile_logit_classes),
        cmocka_unit_test(gpu_hostile_one_token_classes),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("gpu_hostile", tests, NULL, NULL);
}
