/* Faults on a machine with a GPU, each case in a process of its own (meson
 * test per case): the driver hidden from the library while the program
 * itself uses the GPU; a sticky error left by an earlier kernel of the
 * caller, before and after the library's first call; and a cooperative
 * launch the driver refuses because the caller's green context holds fewer
 * multiprocessors than the device. Each must give its status, or fall back,
 * and never crash, abort or hang. 77 without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cudaTypedefs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver_entry.h"
#include "gpu_plan.h"
#include "test_support.h"

/* Set by a case that could not reach what it tests; main then exits 77. */
static char g_skip_reason[256];

/* ------------------------------------------------------------ no driver */

/* ALPHAMOE_CUDA_DRIVER names a missing file before the library's first call
 * (main sets it for this case): the program's own CUDA work goes on, the
 * library answers ALPHAMOE_ERROR_NO_DRIVER everywhere and touches nothing. */
static void gpu_fault_no_driver(void **state) {
    (void)state;
    test_rng rng = case_rng(0x7101);
    route_case c = {512, 10, 8, 700, 0, ALPHAMOE_FLAG_TAIL_FILL, 0, LOGITS_RANDOM, 0, 1, 0};
    case_inputs in;
    inputs_make(&in, &c, &rng);
    device_plan d;
    device_plan_alloc(&d, in.router, 1);
    device_plan_poison(&d, 0);
    device_plan_fill_workspace(&d, 0xA7);
    for (int round = 0; round < 2; ++round) {
        assert_int_equal(alphamoe_route(in.router, c.M, in.device_logits, &d.buffers, NULL), ALPHAMOE_ERROR_NO_DRIVER);
        int32_t count = -5;
        assert_int_equal(alphamoe_device_count(&count), ALPHAMOE_ERROR_NO_DRIVER);
        assert_int_equal(count, -5);
        alphamoe_device_attributes a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        assert_int_equal(alphamoe_device_attributes_query(0, &a), ALPHAMOE_ERROR_NO_DRIVER);
    }
    CUDA_OK(cudaDeviceSynchronize());
    device_plan_read(&d, 0);
    device_plan_expect_poisoned(&d, "driver hidden");
    device_plan_expect_workspace(&d, 0xA7, "driver hidden");
    device_plan_free(&d);
    inputs_free(&in);
}

/* ------------------------------------------------------------ sticky error */

/* Plan arrays in mapped, pinned host memory: the GPU writes them through
 * their device addresses, and the CPU can still read them after a sticky
 * error has killed the context. */
typedef struct mapped_plan {
    host_plan plan; /* arrays point into mapped memory */
    void *workspace;
    float *logits;
} mapped_plan;

static void *mapped_alloc(size_t bytes) {
    void *p = NULL;
    CUDA_OK(cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    return p;
}

static void mapped_plan_make(mapped_plan *m, const alphamoe_router *router, const float *logits, int32_t M, int32_t E) {
    host_plan sized;
    assert_int_equal(host_plan_alloc(&sized, router, 1), 0);
    memset(m, 0, sizeof *m);
    m->plan.params = sized.params;
    m->plan.sizes = sized.sizes;
    const alphamoe_sizes *z = &sized.sizes;
    m->plan.topk_ids = mapped_alloc((size_t)(z->topk_ids.elements + TEST_GUARD) * 4u);
    m->plan.topk_weights = mapped_alloc((size_t)(z->topk_weights.elements + TEST_GUARD) * 4u);
    m->plan.sorted_token_ids = mapped_alloc((size_t)(z->sorted_token_ids.elements + TEST_GUARD) * 4u);
    m->plan.expert_ids = mapped_alloc((size_t)(z->expert_ids.elements + TEST_GUARD) * 4u);
    m->plan.num_tokens_post_padded = mapped_alloc((size_t)(1 + TEST_GUARD) * 4u);
    m->plan.expert_counts = mapped_alloc((size_t)(z->expert_counts.elements + TEST_GUARD) * 4u);
    m->plan.expert_offsets = mapped_alloc((size_t)(z->expert_offsets.elements + TEST_GUARD) * 4u);
    m->plan.pair_to_sorted = mapped_alloc((size_t)(z->pair_to_sorted.elements + TEST_GUARD) * 4u);
    m->workspace = mapped_alloc((size_t)z->workspace.bytes);
    memset(m->workspace, 0, (size_t)z->workspace.bytes);
    m->logits = mapped_alloc((size_t)M * (size_t)E * 4u);
    memcpy(m->logits, logits, (size_t)M * (size_t)E * 4u);
    alphamoe_buffers *b = &m->plan.buffers;
    *b = sized.buffers;
    b->topk_ids = m->plan.topk_ids;
    b->topk_weights = m->plan.topk_weights;
    b->sorted_token_ids = m->plan.sorted_token_ids;
    b->expert_ids = m->plan.expert_ids;
    b->num_tokens_post_padded = m->plan.num_tokens_post_padded;
    b->expert_counts = m->plan.expert_counts;
    b->expert_offsets = m->plan.expert_offsets;
    b->pair_to_sorted = m->plan.pair_to_sorted;
    b->workspace = m->workspace;
    b->workspace_bytes = (size_t)z->workspace.bytes;
    host_plan_free(&sized);
}

/* The context is dead: nothing here is freed (the process ends). */

static void expect_plan_poisoned(const host_plan *p, const char *what) {
    const alphamoe_sizes *z = &p->sizes;
    const int32_t *arrays[] = {p->topk_ids, (const int32_t *)(const void *)p->topk_weights, p->sorted_token_ids,
                               p->expert_ids, p->num_tokens_post_padded, p->expert_counts, p->expert_offsets,
                               p->pair_to_sorted};
    const int64_t n[] = {z->topk_ids.elements, z->topk_weights.elements, z->sorted_token_ids.elements,
                         z->expert_ids.elements, 1, z->expert_counts.elements, z->expert_offsets.elements,
                         z->pair_to_sorted.elements};
    for (int a = 0; a < 8; ++a)
        for (int64_t i = 0; i < n[a] + TEST_GUARD; ++i) {
            const int32_t want = a == 1 ? (int32_t)TEST_POISON_F32_BITS : TEST_POISON_I32;
            if (arrays[a][i] != want) fail_msg("%s: output array %d element %lld was written", what, a, (long long)i);
        }
}

static void sticky_error(int warm) {
    test_rng rng = case_rng(warm ? 0x7202 : 0x7201);
    const int32_t M = 300, E = 128;
    alphamoe_router *router = make_router(E, 8, 16, M, ALPHAMOE_FLAG_TAIL_FILL, 0);
    float *logits = malloc((size_t)M * E * 4u);
    assert_non_null(logits);
    fill_logits(&rng, logits, M, E, E, LOGITS_RANDOM, 0);
    host_plan expected;
    assert_int_equal(host_plan_alloc(&expected, router, 1), 0);
    host_plan_poison(&expected);
    ROUTE_OK(alphamoe_route_host(router, M, logits, &expected.buffers));

    CUDA_OK(cudaFree(0));
    mapped_plan m;
    mapped_plan_make(&m, router, logits, M, E);
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (warm) {
        /* The library is set up and has routed before the fault. */
        host_plan_poison(&m.plan);
        ROUTE_OK(alphamoe_route(router, M, m.logits, &m.plan.buffers, (struct CUstream_st *)stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        char why[512];
        if (compare_plans(&expected, &m.plan, M, WEIGHT_TOLERANCE, why, sizeof why))
            fail_msg("routing before the fault: %s", why);
    }

    /* The caller's kernel traps: the context now holds a sticky error. */
    CUfunction trap = NULL;
    const CUresult loaded = load_ptx_function(kTrapKernelPtx, TRAP_KERNEL_NAME, &trap);
    if (loaded != CUDA_SUCCESS) fail_msg("loading the trap kernel: CUresult %d", (int)loaded);
    PFN_cuLaunchKernel_v4000 launch = (PFN_cuLaunchKernel_v4000)driver_entry("cuLaunchKernel", 4000);
    assert_non_null(launch);
    assert_int_equal(launch(trap, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    const cudaError_t fault = cudaDeviceSynchronize();
    if (fault == cudaSuccess) fail_msg("the trap kernel did not fail");
    print_message("# caller's kernel failed with %s\n", cudaGetErrorName(fault));

    /* The router reports it, on its own stream, on the NULL stream, twice,
     * and writes nothing. */
    host_plan_poison(&m.plan);
    memset(m.workspace, 0, (size_t)m.plan.sizes.workspace.bytes);
    const alphamoe_status on_stream = alphamoe_route(router, M, m.logits, &m.plan.buffers, (struct CUstream_st *)stream);
    const alphamoe_status on_null = alphamoe_route(router, M, m.logits, &m.plan.buffers, NULL);
    const alphamoe_status again = alphamoe_route(router, M, m.logits, &m.plan.buffers, NULL);
    print_message("# after the fault alphamoe_route returned %s\n", alphamoe_status_string(on_stream));
    assert_int_equal(on_stream, ALPHAMOE_ERROR_CUDA);
    assert_int_equal(on_null, ALPHAMOE_ERROR_CUDA);
    assert_int_equal(again, ALPHAMOE_ERROR_CUDA);
    expect_plan_poisoned(&m.plan, "routing after a sticky error");
    for (int64_t i = 0; i < m.plan.sizes.workspace.bytes; ++i)
        if (((unsigned char *)m.workspace)[i] != 0) fail_msg("workspace byte %lld written after the fault", (long long)i);
    /* Not masked: the caller still sees its error. */
    const cudaError_t still = cudaDeviceSynchronize();
    if (still == cudaSuccess) fail_msg("the sticky error was cleared by the router");

    /* The CPU reference does not depend on the context. */
    host_plan_poison(&expected);
    ROUTE_OK(alphamoe_route_host(router, M, logits, &expected.buffers));
    char why[256];
    if (validate_plan(&expected, M, why, sizeof why)) fail_msg("host reference after the fault: %s", why);
    host_plan_free(&expected);
    free(logits);
    alphamoe_router_destroy(router);
}

static void gpu_fault_sticky_error_cold(void **state) {
    (void)state;
    sticky_error(0);
}

static void gpu_fault_sticky_error_warm(void **state) {
    (void)state;
    sticky_error(1);
}

/* ------------------------------------------------------------ cooperative launch refused */

/* Waits for `stream` for at most `seconds`; a router call that never ends
 * ends the process with a message instead of hanging the test run. */
static void wait_or_die(cudaStream_t stream, int seconds, const char *what) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        const cudaError_t q = cudaStreamQuery(stream);
        if (q == cudaSuccess) return;
        if (q != cudaErrorNotReady) fail_msg("%s: %s", what, cudaGetErrorString(q));
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > seconds) {
            printf("FAIL: %s did not finish within %d s: the launch hangs\n", what, seconds);
            fflush(stdout);
            _exit(1);
        }
        usleep(1000);
    }
}

#define ENTRY(type, name, version)                                                    \
    type name = (type)driver_entry(#name, version);                                   \
    if (!name) {                                                                      \
        snprintf(g_skip_reason, sizeof g_skip_reason, "the driver lacks %s", #name); \
        return;                                                                       \
    }

#define DRV_OK(call)                                                                  \
    do {                                                                              \
        const CUresult r_ = (call);                                                   \
        if (r_ != CUDA_SUCCESS) fail_msg("%s: CUresult %d", #call, (int)r_);          \
    } while (0)

/* A green context with the fewest multiprocessors the device allows: the
 * router's attributes (and so its grids) are those of the whole device, so
 * a cooperative grid sized for the device is too large for the context and
 * the driver refuses it, and so may a cluster. The library must fall back
 * to its one-CTA kernel: results exact, no hang. A probe launch shows the
 * refusal is real. */
static void gpu_fault_cooperative_refused(void **state) {
    (void)state;
    test_rng rng = case_rng(0x7301);
    ENTRY(PFN_cuDeviceGet_v2000, cuDeviceGet, 2000)
    ENTRY(PFN_cuDeviceGetDevResource_v12040, cuDeviceGetDevResource, 12040)
    ENTRY(PFN_cuDevSmResourceSplitByCount_v12040, cuDevSmResourceSplitByCount, 12040)
    ENTRY(PFN_cuDevResourceGenerateDesc_v12040, cuDevResourceGenerateDesc, 12040)
    ENTRY(PFN_cuGreenCtxCreate_v12040, cuGreenCtxCreate, 12040)
    ENTRY(PFN_cuCtxFromGreenCtx_v12040, cuCtxFromGreenCtx, 12040)
    ENTRY(PFN_cuGreenCtxStreamCreate_v12050, cuGreenCtxStreamCreate, 12050)
    ENTRY(PFN_cuCtxPushCurrent_v4000, cuCtxPushCurrent, 4000)
    ENTRY(PFN_cuCtxPopCurrent_v4000, cuCtxPopCurrent, 4000)
    ENTRY(PFN_cuLaunchKernelEx_v11060, cuLaunchKernelEx, 11060)
    ENTRY(PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050, cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)

    int ordinal = 0;
    CUDA_OK(cudaGetDevice(&ordinal));
    CUDA_OK(cudaFree(0)); /* the primary context, as the green context wants it */
    CUdevice dev;
    DRV_OK(cuDeviceGet(&dev, ordinal));
    CUdevResource all, part, rest;
    memset(&part, 0, sizeof part);
    DRV_OK(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    unsigned groups = 1;
    const CUresult split = cuDevSmResourceSplitByCount(&part, &groups, &all, &rest, 0, 1);
    if (split == CUDA_ERROR_NOT_SUPPORTED || groups < 1) {
        snprintf(g_skip_reason, sizeof g_skip_reason, "green contexts not supported here (CUresult %d)", (int)split);
        return;
    }
    DRV_OK(split);
    CUdevResourceDesc desc;
    DRV_OK(cuDevResourceGenerateDesc(&desc, &part, 1));
    CUgreenCtx green;
    DRV_OK(cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    CUcontext ctx;
    DRV_OK(cuCtxFromGreenCtx(&ctx, green));
    DRV_OK(cuCtxPushCurrent(ctx));
    CUstream green_stream;
    DRV_OK(cuGreenCtxStreamCreate(&green_stream, green, CU_STREAM_NON_BLOCKING, 0));
    const int green_sms = (int)part.sm.smCount;

    /* The probe: a cooperative grid one CTA larger than the context holds. */
    CUfunction empty;
    DRV_OK(load_ptx_function(kEmptyKernelPtx, EMPTY_KERNEL_NAME, &empty));
    int per_sm = 0;
    DRV_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, empty, 512, 0));
    CUlaunchAttribute coop;
    memset(&coop, 0, sizeof coop);
    coop.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    coop.value.cooperative = 1;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = (unsigned)(per_sm * green_sms + 1);
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 512;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = green_stream;
    cfg.attrs = &coop;
    cfg.numAttrs = 1;
    const CUresult probe = cuLaunchKernelEx(&cfg, empty, NULL, NULL);
    const int refused = probe == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    wait_or_die((cudaStream_t)green_stream, 30, "the probe launch");
    print_message("# green context: %d of %d SMs; cooperative probe of %u CTAs: %s (CUresult %d)\n", green_sms,
                  (int)all.sm.smCount, cfg.gridDimX, refused ? "refused" : "accepted", (int)probe);

    alphamoe_device_attributes attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    ROUTE_OK(alphamoe_device_attributes_query(ordinal, &attrs));
    const struct {
        int32_t force, M, shared, sigmoid;
    } calls[] = {{ALPHAMOE_SPECIALIZATION_SMALL, 512, 0, 0}, {ALPHAMOE_SPECIALIZATION_SMALL, 400, 1, 0},
                 {ALPHAMOE_SPECIALIZATION_LARGE, 4096, 0, 0}, {ALPHAMOE_SPECIALIZATION_LARGE, 100, 1, 0},
                 {ALPHAMOE_SPECIALIZATION_AUTO, 3000, 0, 0}, {ALPHAMOE_SPECIALIZATION_AUTO, 200, 1, 0},
                 {ALPHAMOE_SPECIALIZATION_AUTO, 32, 0, 0},   {ALPHAMOE_SPECIALIZATION_AUTO, 4, 0, 1},
                 {ALPHAMOE_SPECIALIZATION_AUTO, 12, 0, 1},   {ALPHAMOE_SPECIALIZATION_AUTO, 16, 0, 1}};
    int oversized = 0;
    for (int i = 0; i < COUNT(calls); ++i) {
        route_case c = {512, 10, 8, calls[i].M, 0,
                        (calls[i].shared ? ALPHAMOE_FLAG_SHARED_EXPERT : 0u) | ALPHAMOE_FLAG_TAIL_FILL, calls[i].force,
                        LOGITS_RANDOM, 0, 1, 0};
        case_inputs in;
        inputs_make(&in, &c, &rng);
        if (calls[i].sigmoid) inputs_score_by_sigmoid(&in, &c);
        alphamoe_selection sel;
        memset(&sel, 0, sizeof sel);
        sel.struct_size = sizeof sel;
        ROUTE_OK(alphamoe_router_select(in.router, c.M, &attrs, &sel));
        const int too_large = sel.cooperative && sel.grid_ctas > green_sms * attrs.cooperative_ctas_per_sm;
        oversized += too_large;
        device_plan d;
        device_plan_alloc(&d, in.router, 1);
        device_plan_poison(&d, (cudaStream_t)green_stream);
        ROUTE_OK(alphamoe_route(in.router, c.M, in.device_logits, &d.buffers, (struct CUstream_st *)green_stream));
        char what[160];
        snprintf(what, sizeof what, "%s%s grid of %d CTAs on %d SMs (M=%d)", calls[i].sigmoid ? "sigmoid, " : "",
                 alphamoe_specialization_name(sel.specialization), sel.grid_ctas, green_sms, c.M);
        wait_or_die((cudaStream_t)green_stream, 60, what);
        device_plan_read(&d, (cudaStream_t)green_stream);
        check_against(&in.expected, &d, &c, what);
        print_message("# %s%s: exact\n", what, too_large ? ", larger than the context holds" : "");
        device_plan_free(&d);
        inputs_free(&in);
    }
    CUcontext popped;
    DRV_OK(cuCtxPopCurrent(&popped));
    assert_true(oversized > 0);
    if (!refused)
        snprintf(g_skip_reason, sizeof g_skip_reason,
                 "this driver accepted a cooperative grid larger than the green context: the fallback was not "
                 "reached (results were exact and nothing hung)");
}

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    if (argc > 1 && strcmp(argv[1], "gpu_fault_no_driver") == 0)
        setenv("ALPHAMOE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_fault_no_driver),
        cmocka_unit_test(gpu_fault_sticky_error_cold),
        cmocka_unit_test(gpu_fault_sticky_error_warm),
        cmocka_unit_test(gpu_fault_cooperative_refused),
    };
    if (argc < 2) {
        printf("usage: %s CASE (each case needs a process of its own)\n", argv[0]);
        return 2;
    }
    cmocka_set_test_filter(argv[1]);
    const int failed = cmocka_run_group_tests_name("gpu_faults", tests, NULL, NULL);
    if (failed == 0 && g_skip_reason[0]) {
        printf("SKIP: %s\n", g_skip_reason);
        return SKIP_RETURN_CODE;
    }
    return failed;
}
