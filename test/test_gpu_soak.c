/* Long runs, in their own suite (soak):
 *   soak_differential  random shapes, flags, specializations, strides,
 *                      alignments, optional outputs and logit bit patterns,
 *                      GPU against the host reference, for
 *                      ALPHAMOE_SOAK_SECONDS (default 180); prints the count.
 *   soak_graph_calls   ALPHAMOE_SOAK_CALLS (default 1,000,000) routed calls
 *                      through CUDA graph replays of random M on one
 *                      workspace; every 10,000 calls one call is checked
 *                      against the host reference, and the workspace must be
 *                      back in its ready state.
 * A failure names the case number; the printed seed replays the run. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpu_plan.h"
#include "soak.h"
#include "test_support.h"

/* ------------------------------------------------------------ differential */

static route_case random_case(test_rng *rng) {
    route_case c;
    memset(&c, 0, sizeof c);
    c.E = soak_random_experts(rng);
    c.k = soak_random_top_k(rng, c.E);
    c.block_m = soak_random_block_m(rng);
    c.M = soak_random_tokens(rng);
    c.max_tokens = soak_random_max_tokens(rng, c.M);
    c.flags = (rng_below(rng, 2) ? ALPHAMOE_FLAG_TAIL_FILL : 0u) | (rng_below(rng, 2) ? ALPHAMOE_FLAG_PDL : 0u) |
              (c.k >= 2 && rng_below(rng, 2) ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u);
    c.force = (int32_t)rng_below(rng, 4);
    c.pattern = (logit_pattern)rng_below(rng, LOGITS_PATTERN_COUNT);
    c.stride = rng_below(rng, 3) == 0 ? c.E + 1 + (int64_t)rng_below(rng, 9) : 0;
    c.with_optional = (int)rng_below(rng, 2);
    c.logits_offset = (int)rng_below(rng, 4);
    return c;
}

static void soak_differential(void **state) {
    (void)state;
    soak_clock clock;
    soak_start(&clock);
    long cases = 0, pairs = 0;
    while (soak_running(&clock)) {
        test_rng rng;
        soak_case_rng(&rng, cases, 0);
        const route_case c = random_case(&rng);
        snprintf(gpu_case_label, sizeof gpu_case_label, "differential case %ld", cases);
        run_case(&c, &rng);
        ++cases;
        pairs += (long)c.M * c.k;
        if (soak_report_due(&clock))
            print_message("# %.0f s: %ld cases equal to the host reference\n", clock.last_report, cases);
    }
    gpu_case_label[0] = '\0';
    print_message("# differential: %ld random cases (%ld token-expert pairs) in %ld s, all equal to the host "
                  "reference\n", cases, pairs, clock.budget_seconds);
}

/* ------------------------------------------------------------ a million calls */

enum { BATCH_GRAPHS = 16, CALLS_PER_BATCH = 100, CHECK_GRAPHS = 8, CHECK_EVERY = 10000 };

static int32_t random_m(test_rng *rng, int32_t max_tokens) {
    switch (rng_below(rng, 3)) {
    case 0: return (int32_t)rng_below(rng, 17);
    case 1: return (int32_t)rng_below(rng, 513);
    default: return (int32_t)rng_below(rng, (uint32_t)max_tokens + 1);
    }
}

static cudaGraphExec_t capture(const alphamoe_router *router, const int32_t *Ms, int n, const float *logits,
                               const alphamoe_buffers *b, cudaStream_t stream) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    alphamoe_status s = ALPHAMOE_OK;
    for (int i = 0; i < n && s == ALPHAMOE_OK; ++i) s = alphamoe_route(router, Ms[i], logits, b, (struct CUstream_st *)stream);
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    ROUTE_OK(s);
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_OK(cudaGraphDestroy(graph));
    return exec;
}

static void soak_graph_calls(void **state) {
    (void)state;
    const long total = soak_env_long("ALPHAMOE_SOAK_CALLS", 1000000);
    test_rng rng = case_rng(0x8201);
    const int32_t max_tokens = 4096;
    route_case c = {512, 10, 16, max_tokens, max_tokens, ALPHAMOE_FLAG_TAIL_FILL | ALPHAMOE_FLAG_PDL, 0,
                    LOGITS_RANDOM, 0, 1, 0};
    case_inputs in;
    inputs_make(&in, &c, &rng);
    device_plan d;
    device_plan_alloc(&d, in.router, 1);
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    cudaGraphExec_t batches[BATCH_GRAPHS], checks[CHECK_GRAPHS];
    int32_t check_m[CHECK_GRAPHS];
    for (int g = 0; g < BATCH_GRAPHS; ++g) {
        int32_t Ms[CALLS_PER_BATCH];
        for (int i = 0; i < CALLS_PER_BATCH; ++i) Ms[i] = random_m(&rng, max_tokens);
        batches[g] = capture(in.router, Ms, CALLS_PER_BATCH, in.device_logits, &d.buffers, stream);
    }
    for (int g = 0; g < CHECK_GRAPHS; ++g) {
        check_m[g] = g == 0 ? max_tokens : random_m(&rng, max_tokens);
        checks[g] = capture(in.router, &check_m[g], 1, in.device_logits, &d.buffers, stream);
    }

    host_plan expected;
    assert_int_equal(host_plan_alloc(&expected, in.router, 1), 0);
    soak_clock clock;
    soak_start(&clock);
    long calls = 0, checked = 0;
    while (calls < total) {
        /* One window of CHECK_EVERY calls: batches, single calls, and the
         * checked call last, on fresh poison. */
        const long window = total - calls < CHECK_EVERY ? total - calls : CHECK_EVERY;
        long in_window = 0;
        while (in_window + CALLS_PER_BATCH <= window - 1) {
            CUDA_OK(cudaGraphLaunch(batches[rng_below(&rng, BATCH_GRAPHS)], stream));
            in_window += CALLS_PER_BATCH;
        }
        while (in_window < window - 1) {
            CUDA_OK(cudaGraphLaunch(checks[rng_below(&rng, CHECK_GRAPHS)], stream));
            ++in_window;
        }
        if (checked % 10 == 9) {
            /* New logits now and then: the graphs read whatever is there. */
            fill_logits(&rng, in.logits, max_tokens, c.E, c.E, (logit_pattern)rng_below(&rng, LOGITS_PATTERN_COUNT), 0);
            CUDA_OK(cudaMemcpyAsync(in.device_logits, in.logits, (size_t)max_tokens * c.E * 4u, cudaMemcpyHostToDevice, stream));
        }
        const int g = (int)rng_below(&rng, CHECK_GRAPHS);
        device_plan_poison(&d, stream);
        CUDA_OK(cudaGraphLaunch(checks[g], stream));
        ++in_window;
        calls += in_window;
        device_plan_read(&d, stream);
        host_plan_poison(&expected);
        ROUTE_OK(alphamoe_route_host(in.router, check_m[g], in.logits, &expected.buffers));
        route_case at = c;
        at.M = check_m[g];
        snprintf(gpu_case_label, sizeof gpu_case_label, "after %ld calls", calls);
        check_against(&expected, &d, &at, "graph replay soak");
        device_plan_expect_workspace_ready(&d, gpu_case_label);
        ++checked;
    }
    gpu_case_label[0] = '\0';
    const double elapsed = soak_elapsed(&clock);
    print_message("# %ld routed calls through graph replays (random M <= %d) in %.1f s, %ld checked against the "
                  "host reference: no drift, workspace ready after each\n", calls, max_tokens, elapsed, checked);
    for (int g = 0; g < BATCH_GRAPHS; ++g) CUDA_OK(cudaGraphExecDestroy(batches[g]));
    for (int g = 0; g < CHECK_GRAPHS; ++g) CUDA_OK(cudaGraphExecDestroy(checks[g]));
    CUDA_OK(cudaStreamDestroy(stream));
    host_plan_free(&expected);
    device_plan_free(&d);
    inputs_free(&in);
}

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(soak_differential),
        cmocka_unit_test(soak_graph_calls),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("gpu_soak", tests, NULL, NULL);
}
