/* The GPU against the host reference: ids and plan bitwise, weights within
 * 4e-6, and nothing written outside what the contract says. Each case runs
 * as its own meson test (argv[1] names it); without a CUDA device every
 * case exits 77, which meson reports as skipped. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_plan.h"
#include "test_support.h"

/* 16 and 17: the most a plain tiny kernel takes, and the first that a
 * forced tiny call sends to the flavoured one. */
static const int32_t kTokenCounts[] = {1,   2,   3,   7,   8,   9,    16,   17,    31,    64,   127,
                                       128, 129, 255, 256, 511, 512, 1000, 4096, 16384, 65536};
static const int32_t kExpertCounts[] = {1, 2, 8, 16, 60, 64, 128, 160, 256, 257, 384, 512};
static const int32_t kTopKs[] = {1, 2, 4, 6, 8, 10, 16};
static const int32_t kBlockMs[] = {1, 2, 3, 8, 16, 32, 64, 128, 256};

/* ------------------------------------------------------------- the cases */

/* Every (E, k) pair and every block_m, routed and shared, with M cycling
 * through the token counts so each M meets many shapes. */
static void gpu_matches_reference_grid(void **state) {
    (void)state;
    test_rng rng = case_rng(1);
    int cases = 0, idx = 0;
    for (int ei = 0; ei < COUNT(kExpertCounts); ++ei) {
        for (int ki = 0; ki < COUNT(kTopKs); ++ki) {
            const int32_t E = kExpertCounts[ei], k = kTopKs[ki];
            if (k > E) continue;
            for (int bi = 0; bi < COUNT(kBlockMs); ++bi, ++idx) {
                route_case c = {E, k, kBlockMs[bi], kTokenCounts[idx % COUNT(kTokenCounts)], 0,
                                (idx % 4 == 0) ? ALPHAMOE_FLAG_TAIL_FILL : 0u, 0,
                                idx % 3 == 0 ? LOGITS_QUANTIZED : LOGITS_RANDOM, 0, idx % 2, 0};
                run_case(&c, &rng);
                ++cases;
                if (k >= 2) {
                    c.M = kTokenCounts[(idx + 7) % COUNT(kTokenCounts)];
                    c.flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
                    run_case(&c, &rng);
                    ++cases;
                }
            }
        }
    }
    print_message("# %d cases equal to the host reference\n", cases);
}

/* Ties, one hot expert, equal rows, non-finite rows and random bit
 * patterns, through every specialization. */
static void gpu_patterns(void **state) {
    (void)state;
    test_rng rng = case_rng(2);
    static const int32_t shapes[][3] = {{512, 10, 8}, {256, 8, 64}, {8, 2, 64}, {257, 16, 3}, {1, 1, 1}, {2, 2, 256}};
    static const int32_t tokens[] = {1, 9, 129, 1000, 4096};
    int cases = 0;
    for (int p = 0; p < LOGITS_PATTERN_COUNT; ++p)
        for (int s = 0; s < COUNT(shapes); ++s)
            for (int t = 0; t < COUNT(tokens); ++t)
                for (int force = 0; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force) {
                    const int shared = shapes[s][1] >= 2 && (t + force) % 2;
                    route_case c = {shapes[s][0], shapes[s][1], shapes[s][2], tokens[t], 0,
                                    shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u, force, (logit_pattern)p, 0, 1, 0};
                    run_case(&c, &rng);
                    ++cases;
                }
    print_message("# %d pattern cases equal to the host reference\n", cases);
}

/* tiny, small and large forced on the same inputs: bitwise identical,
 * weights included (contract section 6). */
static void gpu_specializations_agree(void **state) {
    (void)state;
    test_rng rng = case_rng(3);
    static const int32_t shapes[][4] = {{512, 10, 8, 0}, {512, 10, 8, 1}, {8, 2, 64, 0},
                                        {257, 16, 3, 1}, {60, 4, 1, 0},  {128, 8, 256, 1}};
    int compared = 0;
    for (int s = 0; s < COUNT(shapes); ++s) {
        for (int t = 0; t < COUNT(kTokenCounts); ++t) {
            const int32_t M = kTokenCounts[t];
            route_case c = {shapes[s][0], shapes[s][1], shapes[s][2], M, 0,
                            shapes[s][3] ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u, 0,
                            t % 2 ? LOGITS_QUANTIZED : LOGITS_RANDOM, 0, 1, 0};
            case_inputs in;
            inputs_make(&in, &c, &rng);
            device_plan d[3];
            for (int v = 0; v < 3; ++v) {
                route_case forced = c;
                forced.force = ALPHAMOE_SPECIALIZATION_TINY + v;
                alphamoe_router *router = make_router(c.E, c.k, c.block_m, c.M, c.flags, forced.force);
                device_plan_alloc(&d[v], router, 1);
                device_plan_poison(&d[v], 0);
                ROUTE_OK(alphamoe_route(router, M, in.device_logits, &d[v].buffers, NULL));
                CUDA_OK(cudaDeviceSynchronize());
                device_plan_read(&d[v], 0);
                check_against(&in.expected, &d[v], &forced, "forced specialization differs from host reference");
                alphamoe_router_destroy(router);
            }
            const host_plan *a = &d[0].mirror;
            for (int v = 1; v < 3; ++v) {
                expect_plans_bitwise_equal(a, &d[v].mirror, M);
                ++compared;
            }
            for (int v = 0; v < 3; ++v) device_plan_free(&d[v]);
            inputs_free(&in);
        }
    }
    print_message("# %d specialization pairs bitwise identical\n", compared);
}

/* Optional outputs off and on, tail fill off and on, plans sized for more
 * tokens than the call has. */
static void gpu_optional_outputs_and_tail(void **state) {
    (void)state;
    test_rng rng = case_rng(4);
    static const int32_t shapes[][3] = {{512, 10, 8}, {64, 6, 16}, {16, 16, 256}, {3, 2, 1}};
    static const int32_t tokens[] = {1, 17, 300, 2500};
    int cases = 0;
    for (int s = 0; s < COUNT(shapes); ++s)
        for (int t = 0; t < COUNT(tokens); ++t)
            for (int v = 0; v < 8; ++v) {
                route_case c = {shapes[s][0], shapes[s][1], shapes[s][2], tokens[t], tokens[t] * 3 + 5,
                                (v & 1) ? ALPHAMOE_FLAG_TAIL_FILL : 0u, (v >> 1) % 4, LOGITS_RANDOM, 0, (v >> 2) & 1, 0};
                run_case(&c, &rng);
                ++cases;
            }
    print_message("# %d cases with optional outputs and tail fill varied\n", cases);
}

/* 1 to 16 tokens, which the tiny kernel plans by few_token_plan.cuh: every
 * (E, k) pair and block_m, routed and shared, M cycling through 1..16 and
 * every logit pattern, optional outputs and tail fill varied, capacity for
 * more tokens than the call has. */
static void gpu_few_tokens(void **state) {
    (void)state;
    test_rng rng = case_rng(18);
    static const logit_pattern patterns[] = {LOGITS_RANDOM,    LOGITS_QUANTIZED,  LOGITS_ONE_HOT,    LOGITS_ALL_EQUAL,
                                             LOGITS_NONFINITE, LOGITS_RANDOM_BITS, LOGITS_ROW_CLASSES};
    int cases = 0;
    for (int ei = 0; ei < COUNT(kExpertCounts); ++ei)
        for (int ki = 0; ki < COUNT(kTopKs); ++ki)
            for (int bi = 0; bi < COUNT(kBlockMs); ++bi)
                for (int shared = 0; shared < 2; ++shared) {
                    const int32_t E = kExpertCounts[ei], k = kTopKs[ki];
                    if (k > E || (shared && k < 2)) continue;
                    const uint32_t v = rng_below(&rng, 8);
                    const int32_t M = 1 + cases % 16;
                    route_case c = {E, k, kBlockMs[bi], M, M + (int32_t)rng_below(&rng, 40),
                                    ((v & 1) ? ALPHAMOE_FLAG_TAIL_FILL : 0u) | (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u),
                                    0, patterns[cases % COUNT(patterns)], 0, (int)((v >> 1) & 1), 0};
                    run_case(&c, &rng);
                    ++cases;
                }
    print_message("# %d cases of 1 to 16 tokens equal to the host reference\n", cases);
}

/* 2 to 8 tokens of rows of 16 slots a lane (257 to 512 candidates), a
 * token a warp in the plain tiny kernel: each M with the row width's edges
 * (one candidate in the upper half of the slots, half of them, all), every
 * logit pattern (ties and equal rows take the general rounds), k and
 * block_m cycling so both few-token plans serve, routed and shared, some
 * rows strided and only 4-byte aligned. */
static void gpu_few_tokens_wide_rows(void **state) {
    (void)state;
    test_rng rng = case_rng(22);
    static const int32_t experts[] = {257, 258, 300, 384, 449, 511, 512};
    static const int32_t top_ks[] = {1, 2, 8, 10, 16};
    static const int32_t block_ms[] = {1, 8, 16, 64};
    int cases = 0;
    for (int ei = 0; ei < COUNT(experts); ++ei)
        for (int32_t M = 2; M <= 8; ++M)
            for (int p = 0; p < LOGITS_PATTERN_COUNT; ++p) {
                const int32_t k = top_ks[cases % COUNT(top_ks)];
                const int shared = k >= 2 && (cases / COUNT(top_ks)) % 2;
                const uint32_t v = rng_below(&rng, 8);
                route_case c = {experts[ei], k, block_ms[(cases / 3) % COUNT(block_ms)], M,
                                M + (int32_t)rng_below(&rng, 20),
                                ((v & 1) ? ALPHAMOE_FLAG_TAIL_FILL : 0u) | (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u),
                                0, (logit_pattern)p, ((v >> 2) & 1) ? experts[ei] + 5 : 0, (int)((v >> 1) & 1),
                                (int)((v >> 2) & 1)};
                run_case(&c, &rng);
                ++cases;
            }
    print_message("# %d cases of 2 to 8 tokens of 257 to 512 experts equal to the host reference\n", cases);
}

/* The library's attributes of the current device. */
static alphamoe_device_attributes current_device_attributes(void) {
    alphamoe_device_attributes attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    int device = 0;
    CUDA_OK(cudaGetDevice(&device));
    ROUTE_OK(alphamoe_device_attributes_query(device, &attrs));
    return attrs;
}

/* The grid a router of (E, k, block_m, flags, force) picks for M tokens. */
static alphamoe_selection selection_for(int32_t E, int32_t k, int32_t block_m, uint32_t flags, int32_t force,
                                        int32_t M, const alphamoe_device_attributes *attrs) {
    alphamoe_router *router = make_router(E, k, block_m, M, flags, force);
    alphamoe_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.struct_size = sizeof sel;
    ROUTE_OK(alphamoe_router_select(router, M, attrs, &sel));
    alphamoe_router_destroy(router);
    return sel;
}

/* small and large with as many tokens a CTA as each side of the token
 * bits' limit (kernels/common/route_cta.cuh: at most a token a warp),
 * where the per-warp count rows take over. Each case checks that its grid
 * is as it says. */
static void gpu_tokens_per_cta_limits(void **state) {
    (void)state;
    test_rng rng = case_rng(19);
    const alphamoe_device_attributes attrs = current_device_attributes();
    static const int32_t per_cta[] = {8, 15, 16, 17, 33};
    static const int32_t shapes[][3] = {{64, 6, 16}, {512, 10, 8}};
    enum { MOST_PER_CTA = 64, MOST_CTAS = 256 };
    int cases = 0;
    for (int force = ALPHAMOE_SPECIALIZATION_SMALL; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force) {
        /* The specialization's largest grid, which a call of many tokens
         * takes: then M = per_cta x that grid puts per_cta on each CTA. */
        const int32_t grid = selection_for(64, 6, 16, 0, force, MOST_PER_CTA * MOST_CTAS, &attrs).grid_ctas;
        for (int s = 0; s < COUNT(shapes); ++s)
            for (int t = 0; t < COUNT(per_cta); ++t) {
                const int32_t M = per_cta[t] * grid;
                route_case c = {shapes[s][0], shapes[s][1], shapes[s][2], M, 0,
                                (cases % 2 ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u) | (cases % 3 ? 0u : ALPHAMOE_FLAG_TAIL_FILL),
                                force, cases % 2 ? LOGITS_QUANTIZED : LOGITS_RANDOM, 0, cases % 2, 0};
                const alphamoe_selection sel = selection_for(c.E, c.k, c.block_m, c.flags, force, M, &attrs);
                if ((int)sel.specialization != force || sel.grid_ctas != grid || sel.tokens_per_cta != per_cta[t])
                    fail_msg("M=%d forced %d: specialization %d, grid %d x %d tokens, not %d x %d", M, force,
                             sel.specialization, sel.grid_ctas, sel.tokens_per_cta, grid, per_cta[t]);
                run_case(&c, &rng);
                ++cases;
            }
    }
    print_message("# %d cases equal to the host reference\n", cases);
}

/* Both sides of the block map's limits (route_cta.cuh). With block_m 1 a
 * call's blocks are its pairs: E64 k8 at 64 tokens has 8 blocks an
 * expert on average, the most the map takes, and at 65 tokens the plan
 * walks the runs. Equal logits give every token the same k experts, so a
 * few groups of many blocks, which their warps write into the map; at
 * 2,200 tokens the large kernel counts by rows (17 tokens a CTA). Every
 * specialization, routed and shared-expert. */
static void gpu_block_map_limits(void **state) {
    (void)state;
    test_rng rng = case_rng(20);
    static const struct {
        int32_t E, k, block_m, M;
        logit_pattern pattern;
    } shapes[] = {{64, 8, 1, 64, LOGITS_RANDOM},      {64, 8, 1, 65, LOGITS_RANDOM},
                  {512, 10, 8, 512, LOGITS_ALL_EQUAL}, {512, 10, 8, 2200, LOGITS_ALL_EQUAL},
                  {256, 8, 64, 2200, LOGITS_RANDOM},   {512, 10, 1, 409, LOGITS_RANDOM},
                  {512, 10, 1, 410, LOGITS_RANDOM}};
    int cases = 0;
    for (int s = 0; s < COUNT(shapes); ++s)
        for (int force = 0; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force)
            for (int shared = 0; shared <= 1; ++shared) {
                route_case c = {shapes[s].E, shapes[s].k, shapes[s].block_m, shapes[s].M, 0,
                                (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u) | (cases % 3 ? 0u : ALPHAMOE_FLAG_TAIL_FILL),
                                force, shapes[s].pattern, 0, cases % 2, 0};
                run_case(&c, &rng);
                ++cases;
            }
    print_message("# %d cases equal to the host reference\n", cases);
}

/* Both sides of the limits of the large kernel's staged entry points
 * (stages_pairs, capi/plan.cpp), which the host launches where a CTA has at
 * most 2,048 pairs (204 and 205 tokens of k = 10; 2,048 and 2,049 of
 * k = 1, whose ranks kept at counting reach 127) and more than two an
 * expert on average (102 and 103 tokens of k = 10 at E512; 64 and 65 of
 * k = 2 at E64). Equal logits give every token the same experts, so the
 * ranks reach their largest values and an expert's run of the CTA's list
 * is long; the shared expert's rank is its token's place in its warp.
 * From block_m 32 on the staged pairs write their blocks' ids: at E8
 * their blocks do not fit the block map, with 110 tokens of k = 10 at E512
 * they do. */
static void gpu_staged_limits(void **state) {
    (void)state;
    test_rng rng = case_rng(21);
    const alphamoe_device_attributes attrs = current_device_attributes();
    static const struct {
        int32_t E, k, block_m, per_cta;
        uint32_t flags;
        logit_pattern pattern;
    } shapes[] = {{512, 10, 8, 204, 0u, LOGITS_ALL_EQUAL},
                  {512, 10, 8, 204, ALPHAMOE_FLAG_SHARED_EXPERT, LOGITS_RANDOM},
                  {512, 10, 8, 205, 0u, LOGITS_RANDOM},
                  {512, 10, 1, 103, 0u, LOGITS_RANDOM},
                  {512, 10, 8, 102, 0u, LOGITS_QUANTIZED},
                  {64, 1, 4, 2048, 0u, LOGITS_ALL_EQUAL},
                  {64, 1, 4, 2049, 0u, LOGITS_ALL_EQUAL},
                  {64, 1, 3, 2048, 0u, LOGITS_RANDOM},
                  {64, 2, 4, 1024, ALPHAMOE_FLAG_SHARED_EXPERT, LOGITS_RANDOM},
                  {64, 2, 4, 1025, ALPHAMOE_FLAG_SHARED_EXPERT, LOGITS_ALL_EQUAL},
                  {64, 2, 4, 64, 0u, LOGITS_ALL_EQUAL},
                  {64, 2, 4, 65, 0u, LOGITS_ALL_EQUAL},
                  {64, 2, 16, 65, 0u, LOGITS_RANDOM},
                  {512, 10, 64, 110, 0u, LOGITS_RANDOM},
                  {512, 10, 64, 110, ALPHAMOE_FLAG_SHARED_EXPERT, LOGITS_QUANTIZED},
                  {8, 2, 64, 64, 0u, LOGITS_RANDOM},
                  {8, 2, 32, 64, ALPHAMOE_FLAG_SHARED_EXPERT, LOGITS_QUANTIZED},
                  {8, 2, 16, 64, 0u, LOGITS_ALL_EQUAL}};
    const int32_t force = ALPHAMOE_SPECIALIZATION_LARGE;
    int cases = 0;
    for (int s = 0; s < COUNT(shapes); ++s) {
        const int32_t grid =
            selection_for(shapes[s].E, shapes[s].k, shapes[s].block_m, shapes[s].flags, force, 64 * 256, &attrs)
                .grid_ctas;
        const int32_t M = shapes[s].per_cta * grid;
        route_case c = {shapes[s].E, shapes[s].k, shapes[s].block_m, M, 0,
                        shapes[s].flags | (cases % 3 ? 0u : ALPHAMOE_FLAG_TAIL_FILL), force, shapes[s].pattern, 0,
                        cases % 2, 0};
        const alphamoe_selection sel = selection_for(c.E, c.k, c.block_m, c.flags, force, M, &attrs);
        if ((int)sel.specialization != force || sel.tokens_per_cta != shapes[s].per_cta)
            fail_msg("M=%d: specialization %d, %d tokens a CTA, not large with %d", M, sel.specialization,
                     sel.tokens_per_cta, shapes[s].per_cta);
        run_case(&c, &rng);
        ++cases;
    }
    print_message("# %d cases equal to the host reference\n", cases);
}

/* Row strides above E (odd ones too) and logits only 4-byte aligned. */
static void gpu_logits_row_stride(void **state) {
    (void)state;
    test_rng rng = case_rng(5);
    static const int32_t shapes[][3] = {{512, 10, 8}, {257, 8, 64}, {60, 4, 16}, {8, 2, 1}};
    static const int32_t tokens[] = {1, 100, 3000};
    int cases = 0;
    for (int s = 0; s < COUNT(shapes); ++s)
        for (int t = 0; t < COUNT(tokens); ++t)
            for (int v = 0; v < 4; ++v) {
                const int64_t E = shapes[s][0];
                const int64_t strides[] = {E + 1, E + 3, 2 * E, E};
                route_case c = {shapes[s][0], shapes[s][1], shapes[s][2], tokens[t], 0, 0u,
                                v % 4, LOGITS_RANDOM, strides[v], 1, v % 2};
                run_case(&c, &rng);
                ++cases;
            }
    print_message("# %d stride/alignment cases\n", cases);
}

/* M == 0 writes num_tokens_post_padded = 0 and nothing else, even with
 * tail fill on and NULL token-shaped pointers. */
static void gpu_empty_batch(void **state) {
    (void)state;
    test_rng rng = case_rng(6);
    for (int force = 0; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force)
        for (int flags = 0; flags < 4; ++flags) {
            route_case c = {64, 4, 16, 0, 100, (uint32_t)flags, force, LOGITS_RANDOM, 0, 1, 0};
            case_inputs in;
            inputs_make(&in, &c, &rng);
            device_plan d;
            device_plan_alloc(&d, in.router, 1);
            device_plan_poison(&d, 0);
            alphamoe_buffers b = d.buffers;
            b.topk_ids = NULL;
            b.topk_weights = NULL;
            b.pair_to_sorted = NULL;
            ROUTE_OK(alphamoe_route(in.router, 0, NULL, &b, NULL));
            CUDA_OK(cudaDeviceSynchronize());
            device_plan_read(&d, 0);
            check_against(&in.expected, &d, &c, "empty batch");
            device_plan_free(&d);
            inputs_free(&in);
        }
}

/* Captured once, replayed with new logits each time. */
static void gpu_graph_replay(void **state) {
    (void)state;
    test_rng rng = case_rng(7);
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int replays = 0;
    /* Each specialization forced, routed-only and shared-expert, then
     * sigmoid scoring at 4 and 12 tokens: clusters of a CTA a token, the
     * second of a size past the portable one. */
    for (int force = 0; force <= ALPHAMOE_SPECIALIZATION_LARGE + 1; ++force)
        for (int shared = 0; shared < 2; ++shared) {
            const int sigmoid = force > ALPHAMOE_SPECIALIZATION_LARGE;
            route_case c = {512, 10, 8, sigmoid ? 4 + 8 * shared : force == 1 ? 40 : 3000, 0,
                            shared && !sigmoid ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u, sigmoid ? 0 : force,
                            LOGITS_RANDOM, 0, 1, 0};
            case_inputs in;
            inputs_make(&in, &c, &rng);
            if (sigmoid) inputs_score_by_sigmoid(&in, &c);
            device_plan d;
            device_plan_alloc(&d, in.router, 1);
            cudaGraph_t graph;
            cudaGraphExec_t exec;
            CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
            const alphamoe_status st = alphamoe_route(in.router, c.M, in.device_logits, &d.buffers,
                                                      (struct CUstream_st *)stream);
            CUDA_OK(cudaStreamEndCapture(stream, &graph));
            ROUTE_OK(st);
            CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
            for (int r = 0; r < 8; ++r, ++replays) {
                fill_logits(&rng, in.logits, c.M, c.E, c.E, r % 2 ? LOGITS_QUANTIZED : LOGITS_RANDOM, 0);
                CUDA_OK(cudaMemcpy(in.device_logits, in.logits, (size_t)c.M * c.E * 4, cudaMemcpyHostToDevice));
                host_plan_poison(&in.expected);
                ROUTE_OK(alphamoe_route_host(in.router, c.M, in.logits, &in.expected.buffers));
                device_plan_poison(&d, stream);
                CUDA_OK(cudaGraphLaunch(exec, stream));
                CUDA_OK(cudaStreamSynchronize(stream));
                device_plan_read(&d, stream);
                check_against(&in.expected, &d, &c, "graph replay");
            }
            CUDA_OK(cudaGraphExecDestroy(exec));
            CUDA_OK(cudaGraphDestroy(graph));
            device_plan_free(&d);
            inputs_free(&in);
        }
    CUDA_OK(cudaStreamDestroy(stream));
    print_message("# %d graph replays checked\n", replays);
}

/* 1000 calls on one workspace with no synchronization between them, M
 * drawn at random so the specializations alternate; every 100th checked. */
static void gpu_back_to_back(void **state) {
    (void)state;
    test_rng rng = case_rng(8);
    const int32_t max_tokens = 8192;
    route_case c = {512, 10, 8, max_tokens, max_tokens, 0u, 0, LOGITS_RANDOM, 0, 1, 0};
    case_inputs in;
    inputs_make(&in, &c, &rng);
    device_plan d;
    device_plan_alloc(&d, in.router, 1);
    int checked = 0;
    for (int call = 1; call <= 1000; ++call) {
        const int32_t M = (int32_t)rng_below(&rng, (uint32_t)max_tokens + 1);
        const int check = call % 100 == 0;
        if (check) device_plan_poison(&d, 0);
        ROUTE_OK(alphamoe_route(in.router, M, in.device_logits, &d.buffers, NULL));
        if (!check) continue;
        CUDA_OK(cudaDeviceSynchronize());
        device_plan_read(&d, 0);
        host_plan_poison(&in.expected);
        ROUTE_OK(alphamoe_route_host(in.router, M, in.logits, &in.expected.buffers));
        route_case at = c;
        at.M = M;
        check_against(&in.expected, &d, &at, "back-to-back call");
        ++checked;
    }
    device_plan_expect_workspace_ready(&d, "after 1000 back-to-back calls");
    device_plan_free(&d);
    inputs_free(&in);
    print_message("# 1000 calls, %d checked\n", checked);
}

/* One workspace shared by routers of different E, calls alternating
 * between the large kernel of each and the small kernel's cooperative grid
 * (forced: 600 tokens): every call exact, and the workspace ready for the
 * next after each. */
static void gpu_shared_workspace(void **state) {
    (void)state;
    test_rng rng = case_rng(15);
    route_case cases[3] = {{512, 10, 8, 3000, 3000, 0u, 0, LOGITS_RANDOM, 0, 1, 0},
                           {64, 6, 16, 2000, 2000, 0u, 0, LOGITS_RANDOM, 0, 1, 0},
                           {64, 6, 16, 600, 600, 0u, ALPHAMOE_SPECIALIZATION_SMALL, LOGITS_RANDOM, 0, 1, 0}};
    case_inputs in[3];
    device_plan d[3];
    for (int i = 0; i < 3; ++i) {
        inputs_make(&in[i], &cases[i], &rng);
        device_plan_alloc(&d[i], in[i].router, 1);
    }
    /* The E = 512 router's workspace is the largest; the others borrow it. */
    for (int i = 1; i < 3; ++i) {
        assert_true(d[0].buffers.workspace_bytes >= d[i].buffers.workspace_bytes);
        d[i].buffers.workspace = d[0].buffers.workspace;
        d[i].buffers.workspace_bytes = d[0].buffers.workspace_bytes;
    }
    for (int call = 0; call < 12; ++call) {
        const int r = call % 3;
        const route_case *c = &cases[r];
        fill_logits(&rng, in[r].logits, c->M, c->E, in[r].stride, LOGITS_RANDOM, 0);
        inputs_update(&in[r], c);
        device_plan_poison(&d[r], 0);
        route_on(&in[r], c, &d[r], 0);
        device_plan_read(&d[r], 0);
        check_against(&in[r].expected, &d[r], c, "shared workspace");
        device_plan_expect_workspace_ready(&d[0], "shared workspace");
    }
    for (int i = 0; i < 3; ++i) {
        device_plan_free(&d[i]);
        inputs_free(&in[i]);
    }
}

/* Two plans of different shapes on two streams, interleaved. */
static void gpu_two_streams(void **state) {
    (void)state;
    test_rng rng = case_rng(9);
    route_case cases[2] = {{512, 10, 8, 3000, 0, 0u, 0, LOGITS_RANDOM, 0, 1, 0},
                           {128, 8, 64, 200, 0, ALPHAMOE_FLAG_SHARED_EXPERT, 0, LOGITS_RANDOM, 0, 1, 0}};
    case_inputs in[2];
    device_plan d[2];
    cudaStream_t streams[2];
    for (int i = 0; i < 2; ++i) {
        inputs_make(&in[i], &cases[i], &rng);
        device_plan_alloc(&d[i], in[i].router, 1);
        CUDA_OK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    }
    for (int round = 0; round < 10; ++round) {
        for (int i = 0; i < 2; ++i) {
            fill_logits(&rng, in[i].logits, cases[i].M, cases[i].E, cases[i].E, LOGITS_RANDOM, 0);
            CUDA_OK(cudaMemcpy(in[i].device_logits, in[i].logits, (size_t)cases[i].M * cases[i].E * 4,
                               cudaMemcpyHostToDevice));
            host_plan_poison(&in[i].expected);
            ROUTE_OK(alphamoe_route_host(in[i].router, cases[i].M, in[i].logits, &in[i].expected.buffers));
            device_plan_poison(&d[i], streams[i]);
        }
        for (int call = 0; call < 20; ++call)
            for (int i = 0; i < 2; ++i)
                ROUTE_OK(alphamoe_route(in[i].router, cases[i].M, in[i].device_logits, &d[i].buffers,
                                        (struct CUstream_st *)streams[i]));
        for (int i = 0; i < 2; ++i) {
            device_plan_read(&d[i], streams[i]);
            check_against(&in[i].expected, &d[i], &cases[i], "two streams");
        }
    }
    for (int i = 0; i < 2; ++i) {
        CUDA_OK(cudaStreamDestroy(streams[i]));
        device_plan_free(&d[i]);
        inputs_free(&in[i]);
    }
}

/* Programmatic dependent launch: the second router reads the first one's
 * weights as its logits, so it must wait for the first kernel. */
static void gpu_pdl(void **state) {
    (void)state;
    test_rng rng = case_rng(10);
    const int32_t M = 2000, k_producer = 16;
    int checked = 0;
    for (int force = 0; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force) {
        route_case producer = {512, k_producer, 8, M, 0, ALPHAMOE_FLAG_PDL, 0, LOGITS_RANDOM, 0, 1, 0};
        route_case consumer = {k_producer, 4, 16, M, 0, ALPHAMOE_FLAG_PDL, force, LOGITS_RANDOM, 0, 1, 0};
        case_inputs in;
        inputs_make(&in, &producer, &rng);
        alphamoe_router *consumer_router = make_router(consumer.E, consumer.k, consumer.block_m, M,
                                                       consumer.flags, force);
        device_plan dp, dc;
        device_plan_alloc(&dp, in.router, 1);
        device_plan_alloc(&dc, consumer_router, 1);
        host_plan expected;
        assert_int_equal(host_plan_alloc(&expected, consumer_router, 1), 0);
        for (int r = 0; r < 10; ++r, ++checked) {
            fill_logits(&rng, in.logits, M, producer.E, producer.E, LOGITS_RANDOM, 0);
            CUDA_OK(cudaMemcpy(in.device_logits, in.logits, (size_t)M * producer.E * 4, cudaMemcpyHostToDevice));
            device_plan_poison(&dp, 0);
            device_plan_poison(&dc, 0);
            ROUTE_OK(alphamoe_route(in.router, M, in.device_logits, &dp.buffers, NULL));
            ROUTE_OK(alphamoe_route(consumer_router, M, dp.buffers.topk_weights, &dc.buffers, NULL));
            CUDA_OK(cudaDeviceSynchronize());
            device_plan_read(&dp, 0);
            device_plan_read(&dc, 0);
            host_plan_poison(&expected);
            ROUTE_OK(alphamoe_route_host(consumer_router, M, dp.mirror.topk_weights, &expected.buffers));
            check_against(&expected, &dc, &consumer, "dependent launch consumer");
        }
        host_plan_free(&expected);
        device_plan_free(&dp);
        device_plan_free(&dc);
        alphamoe_router_destroy(consumer_router);
        inputs_free(&in);
    }
    print_message("# %d producer/consumer pairs with PDL checked\n", checked);
}

/* The device as the library sees it agrees with the runtime. */
static void gpu_info(void **state) {
    (void)state;
    int device = 0;
    CUDA_OK(cudaGetDevice(&device));
    struct cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, device));
    alphamoe_device_attributes attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    ROUTE_OK(alphamoe_device_attributes_query(device, &attrs));
    assert_int_equal(attrs.compute_capability, prop.major * 10 + prop.minor);
    assert_int_equal(attrs.multiprocessor_count, prop.multiProcessorCount);
    assert_true(attrs.cooperative_ctas_per_sm >= 1);
    assert_int_equal(attrs.cooperative_launch, prop.cooperativeLaunch);
    char name[256];
    int32_t cc = 0, arch = 0, count = 0;
    ROUTE_OK(alphamoe_device_count(&count));
    assert_true(count >= 1);
    ROUTE_OK(alphamoe_device_describe(device, name, sizeof name, &cc, &arch));
    assert_string_equal(name, prop.name);
    assert_int_equal(cc, attrs.compute_capability);
    assert_int_equal(arch, cc);
    assert_int_equal(alphamoe_device_describe(count, name, sizeof name, &cc, &arch), ALPHAMOE_ERROR_NO_DEVICE);
    alphamoe_router *router = make_router(512, 10, 8, 65536, 0, 0);
    alphamoe_selection sel;
    memset(&sel, 0, sizeof sel);
    sel.struct_size = sizeof sel;
    for (int t = 0; t < COUNT(kTokenCounts); ++t) {
        ROUTE_OK(alphamoe_router_select(router, kTokenCounts[t], &attrs, &sel));
        assert_true((int64_t)sel.grid_ctas * sel.tokens_per_cta >= kTokenCounts[t]);
        assert_true(sel.grid_ctas <= attrs.multiprocessor_count * attrs.cooperative_ctas_per_sm);
        print_message("# M=%-6d -> %s grid %d x %d threads, %d tokens per CTA, sm_%da\n", kTokenCounts[t],
                      sel.specialization == ALPHAMOE_SPECIALIZATION_TINY    ? "tiny "
                      : sel.specialization == ALPHAMOE_SPECIALIZATION_SMALL ? "small"
                                                                            : "large",
                      sel.grid_ctas, sel.block_threads, sel.tokens_per_cta, sel.image_arch);
    }
    alphamoe_router_destroy(router);
}

/* A device the library has no image for gets ALPHAMOE_ERROR_NO_IMAGE from
 * every GPU entry point and nothing is written; a device it has one for
 * routes. Meaningful in both kinds of build: run it from a build whose
 * gpu_archs leave the device's architecture out, and from a full one. */
static void gpu_image_lookup(void **state) {
    (void)state;
    test_rng rng = case_rng(12);
    int device = 0;
    CUDA_OK(cudaGetDevice(&device));
    char name[256];
    int32_t cc = 0, image_arch = -1;
    ROUTE_OK(alphamoe_device_describe(device, name, sizeof name, &cc, &image_arch));
    route_case c = {128, 8, 16, 300, 0, 0u, 0, LOGITS_RANDOM, 0, 1, 0};
    case_inputs in;
    inputs_make(&in, &c, &rng);
    device_plan d;
    device_plan_alloc(&d, in.router, 1);
    device_plan_poison(&d, 0);
    const alphamoe_status routed = alphamoe_route(in.router, c.M, in.device_logits, &d.buffers, NULL);
    CUDA_OK(cudaDeviceSynchronize());
    device_plan_read(&d, 0);
    alphamoe_device_attributes attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    const alphamoe_status queried = alphamoe_device_attributes_query(device, &attrs);
    if (image_arch == 0) {
        print_message("# %s (compute capability %d): no image in this build\n", name, cc);
        assert_int_equal(routed, ALPHAMOE_ERROR_NO_IMAGE);
        assert_int_equal(queried, ALPHAMOE_ERROR_NO_IMAGE);
        /* Nothing written: compare with a freshly poisoned plan. */
        host_plan untouched;
        assert_int_equal(host_plan_alloc(&untouched, in.router, 1), 0);
        host_plan_poison(&untouched);
        assert_memory_equal(d.mirror.topk_ids, untouched.topk_ids, (size_t)(d.mirror.sizes.topk_ids.bytes + 4 * TEST_GUARD));
        assert_memory_equal(d.mirror.sorted_token_ids, untouched.sorted_token_ids,
                            (size_t)(d.mirror.sizes.sorted_token_ids.bytes + 4 * TEST_GUARD));
        assert_int_equal(*d.mirror.num_tokens_post_padded, TEST_POISON_I32);
        host_plan_free(&untouched);
    } else {
        print_message("# %s (compute capability %d): image sm_%da\n", name, cc, image_arch);
        ROUTE_OK(routed);
        ROUTE_OK(queried);
        check_against(&in.expected, &d, &c, "routing with an image");
    }
    device_plan_free(&d);
    inputs_free(&in);
}

/* The first GPU calls of the process come from many threads at once: the
 * per-device state is resolved once, and every result is exact. */
enum { FIRST_CALL_THREADS = 8 };
typedef struct first_call_job {
    pthread_barrier_t *start;
    case_inputs *in;
    device_plan *plan;
    cudaStream_t stream;
    const route_case *c;
    alphamoe_status status;
} first_call_job;

static void *first_call_thread(void *arg) {
    first_call_job *job = arg;
    pthread_barrier_wait(job->start);
    job->status = alphamoe_route(job->in->router, job->c->M, job->in->device_logits, &job->plan->buffers,
                                 (struct CUstream_st *)job->stream);
    return NULL;
}

static void gpu_concurrent_first_calls(void **state) {
    (void)state;
    test_rng rng = case_rng(13);
    route_case cases[FIRST_CALL_THREADS];
    case_inputs in[FIRST_CALL_THREADS];
    device_plan plans[FIRST_CALL_THREADS];
    first_call_job jobs[FIRST_CALL_THREADS];
    pthread_t threads[FIRST_CALL_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, FIRST_CALL_THREADS);
    for (int i = 0; i < FIRST_CALL_THREADS; ++i) {
        const route_case c = {i % 2 ? 512 : 64, i % 2 ? 10 : 6, 8 << (i % 3), 5 + 700 * i, 0,
                              i % 3 == 0 ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u, i % 4, LOGITS_RANDOM, 0, 1, 0};
        cases[i] = c;
        inputs_make(&in[i], &cases[i], &rng);
        device_plan_alloc(&plans[i], in[i].router, 1);
        jobs[i] = (first_call_job){&start, &in[i], &plans[i], NULL, &cases[i], ALPHAMOE_ERROR_CUDA};
        CUDA_OK(cudaStreamCreateWithFlags(&jobs[i].stream, cudaStreamNonBlocking));
        device_plan_poison(&plans[i], jobs[i].stream);
    }
    for (int i = 0; i < FIRST_CALL_THREADS; ++i)
        assert_int_equal(pthread_create(&threads[i], NULL, first_call_thread, &jobs[i]), 0);
    for (int i = 0; i < FIRST_CALL_THREADS; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
    for (int i = 0; i < FIRST_CALL_THREADS; ++i) {
        ROUTE_OK(jobs[i].status);
        device_plan_read(&plans[i], jobs[i].stream);
        check_against(&in[i].expected, &plans[i], &cases[i], "concurrent first call");
        CUDA_OK(cudaStreamDestroy(jobs[i].stream));
        device_plan_free(&plans[i]);
        inputs_free(&in[i]);
    }
    pthread_barrier_destroy(&start);
}

/* Small shapes through the six plain kernels, for the compute-sanitizer runs:
 * every specialization, routed and shared, every flag combination. */
static void gpu_sanitizer_sweep(void **state) {
    (void)state;
    test_rng rng = case_rng(11);
    /* One shape per row width (1, 2, 4, 8 and 16 slots), so every entry
     * point of every plain kernel runs under the tool (the staged ones
     * below): tiny's at one token and at 9 (a token a warp, the calls it
     * takes), and forced beyond them (the flavoured tiny kernel's). 5
     * tokens at block_m 8 take the token warps' plan (few_token_plan.cuh),
     * with the whole CTA where the tail is filled, the token warps alone
     * where it is not (shared-expert mode here). */
    static const int32_t shapes[][3] = {{16, 4, 16}, {64, 6, 16}, {128, 8, 64}, {256, 8, 16}, {512, 10, 8}};
    static const int32_t tokens[] = {1, 5, 9, 37, 300};
    for (int s = 0; s < COUNT(shapes); ++s)
        for (int t = 0; t < COUNT(tokens); ++t)
            for (int force = ALPHAMOE_SPECIALIZATION_TINY; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force)
                for (int shared = 0; shared < 2; ++shared) {
                    const uint32_t tail = tokens[t] == 5 && shared ? 0u : ALPHAMOE_FLAG_TAIL_FILL;
                    route_case c = {shapes[s][0], shapes[s][1], shapes[s][2], tokens[t], 0,
                                    tail | (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u),
                                    force, LOGITS_QUANTIZED, 0, 1, 0};
                    run_case(&c, &rng);
                }
    /* 5 tokens of E512 random logits: the quantized rows above tie, and
     * take the general rounds; these take the gathering and ranking of the
     * candidates (warp_rank_row), and both few-token plans, tail filled and
     * not. */
    for (int v = 0; v < 4; ++v) {
        route_case c = {512, 10, v < 2 ? 8 : 16, 5, 0,
                        (v % 2 ? ALPHAMOE_FLAG_TAIL_FILL : 0u) | (v == 1 ? 0u : ALPHAMOE_FLAG_SHARED_EXPERT),
                        ALPHAMOE_SPECIALIZATION_TINY, LOGITS_RANDOM, 0, 1, 0};
        run_case(&c, &rng);
    }
    /* The large kernel's staged entry points (stages_pairs, capi/plan.cpp):
     * 110 tokens a CTA, more than two pairs an expert a CTA in every shape. */
    const alphamoe_device_attributes attrs = current_device_attributes();
    const int32_t grid = selection_for(512, 10, 8, 0, ALPHAMOE_SPECIALIZATION_LARGE, 64 * 256, &attrs).grid_ctas;
    for (int s = 0; s < COUNT(shapes); ++s)
        for (int shared = 0; shared < 2; ++shared) {
            route_case c = {shapes[s][0], shapes[s][1], shapes[s][2], 110 * grid, 0,
                            ALPHAMOE_FLAG_TAIL_FILL | (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u),
                            ALPHAMOE_SPECIALIZATION_LARGE, LOGITS_QUANTIZED, 0, 1, 0};
            run_case(&c, &rng);
        }
    /* Every flag combination and the optional outputs off, through the plain
     * small and large kernels and, forced to tiny, the flavoured tiny one (45
     * tokens); an empty batch; logits offset by a float with an odd stride;
     * rows of every bit class. */
    for (int force = ALPHAMOE_SPECIALIZATION_TINY; force <= ALPHAMOE_SPECIALIZATION_LARGE; ++force)
        for (int flags = 0; flags < 4; ++flags) {
            const int shared = (flags + force) % 2;
            const uint32_t f = (flags & 1 ? ALPHAMOE_FLAG_TAIL_FILL : 0u) | (flags & 2 ? ALPHAMOE_FLAG_PDL : 0u) |
                               (shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u);
            route_case c = {60, 4, 8, 45, 100, f, force, LOGITS_ROW_CLASSES, flags == 3 ? 63 : 0, flags % 2,
                            flags == 3 ? 1 : 0};
            run_case(&c, &rng);
            c.M = 0;
            c.stride = 0;
            c.logits_offset = 0;
            run_case(&c, &rng);
        }
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_matches_reference_grid),
        cmocka_unit_test(gpu_patterns),
        cmocka_unit_test(gpu_specializations_agree),
        cmocka_unit_test(gpu_optional_outputs_and_tail),
        cmocka_unit_test(gpu_few_tokens),
        cmocka_unit_test(gpu_few_tokens_wide_rows),
        cmocka_unit_test(gpu_tokens_per_cta_limits),
        cmocka_unit_test(gpu_block_map_limits),
        cmocka_unit_test(gpu_staged_limits),
        cmocka_unit_test(gpu_logits_row_stride),
        cmocka_unit_test(gpu_empty_batch),
        cmocka_unit_test(gpu_graph_replay),
        cmocka_unit_test(gpu_back_to_back),
        cmocka_unit_test(gpu_shared_workspace),
        cmocka_unit_test(gpu_two_streams),
        cmocka_unit_test(gpu_pdl),
        cmocka_unit_test(gpu_info),
        cmocka_unit_test(gpu_image_lookup),
        cmocka_unit_test(gpu_concurrent_first_calls),
        cmocka_unit_test(gpu_sanitizer_sweep),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("gpu", tests, NULL, NULL);
}
