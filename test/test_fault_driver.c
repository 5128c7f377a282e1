/* A broken or absent CUDA driver is a status, never a crash: each variant
 * runs in a child process of its own (the library loads the driver once per
 * process) with ALPHAMOE_CUDA_DRIVER pointing at a stub driver that lacks
 * one entry point, fails cuInit, has no device, or is not a driver at all.
 * Every GPU entry point must return the expected status, change nothing, and
 * the CPU reference must keep working. Needs no GPU: runs in CI. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"

/* Every entry point the library resolves (capi/driver.cpp). */
static const char *const kEntryPoints[] = {
    "cuGetErrorName", "cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease", "cuCtxGetCurrent", "cuCtxPushCurrent",
    "cuCtxPopCurrent", "cuCtxGetDevice", "cuStreamGetCtx", "cuCtxGetId", "cuLibraryLoadData", "cuLibraryGetKernel",
    "cuKernelGetAttribute", "cuKernelGetFunction", "cuKernelSetAttribute", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuOccupancyMaxActiveClusters", "cuLaunchKernelEx",
};
#define ENTRY_POINT_COUNT ((int)(sizeof kEntryPoints / sizeof kEntryPoints[0]))

/* In the child: report and leave with a status the parent names. */
#define CHILD_CHECK(cond, ...)                                    \
    do {                                                          \
        if (!(cond)) {                                            \
            fprintf(stderr, "  child: %s: ", #cond);              \
            fprintf(stderr, __VA_ARGS__);                         \
            fprintf(stderr, "\n");                                \
            fflush(stderr);                                       \
            _exit(1);                                             \
        }                                                         \
    } while (0)

/* Everything a program could call with this driver: the status of each GPU
 * entry point must be `want`, twice (the outcome is kept), with nothing
 * written; then the host reference must route. */
static void child_body(alphamoe_status want) {
    for (int round = 0; round < 2; ++round) {
        int32_t count = 12345;
        alphamoe_status s = alphamoe_device_count(&count);
        CHILD_CHECK(s == want, "alphamoe_device_count: %s", alphamoe_status_string(s));
        CHILD_CHECK(count == 12345, "device count written on failure");

        alphamoe_device_attributes attrs;
        memset(&attrs, 0x5C, sizeof attrs);
        attrs.struct_size = sizeof attrs;
        const alphamoe_device_attributes attrs_before = attrs;
        s = alphamoe_device_attributes_query(0, &attrs);
        CHILD_CHECK(s == want, "alphamoe_device_attributes_query: %s", alphamoe_status_string(s));
        CHILD_CHECK(memcmp(&attrs, &attrs_before, sizeof attrs) == 0, "attributes written on failure");

        char name[32] = "unchanged";
        int32_t cc = -7, arch = -7;
        s = alphamoe_device_describe(0, name, sizeof name, &cc, &arch);
        CHILD_CHECK(s == want, "alphamoe_device_describe: %s", alphamoe_status_string(s));
        CHILD_CHECK(strcmp(name, "unchanged") == 0 && cc == -7 && arch == -7, "describe wrote on failure");

        /* A fully valid call; host memory stands in for device memory, as
         * the driver must stop it before anything is read or written. */
        test_rng rng;
        rng_seed(&rng, test_base_seed() ^ 0xD41Fu);
        alphamoe_router *router = make_router(64, 6, 16, 40, ALPHAMOE_FLAG_TAIL_FILL, 0);
        host_plan plan, untouched;
        CHILD_CHECK(host_plan_alloc(&plan, router, 1) == 0 && host_plan_alloc(&untouched, router, 1) == 0, "alloc");
        host_plan_poison(&plan);
        host_plan_poison(&untouched);
        float *logits = malloc(sizeof(float) * 40 * 64);
        CHILD_CHECK(logits != NULL, "alloc");
        fill_logits(&rng, logits, 40, 64, 64, LOGITS_RANDOM, 0);
        const size_t ws_bytes = (size_t)plan.sizes.workspace.bytes;
        unsigned char *workspace = aligned_alloc(64, ws_bytes);
        CHILD_CHECK(workspace != NULL, "alloc");
        memset(workspace, 0x3D, ws_bytes);
        plan.buffers.workspace = workspace;
        plan.buffers.workspace_bytes = ws_bytes;
        s = alphamoe_route(router, 40, logits, &plan.buffers, NULL);
        CHILD_CHECK(s == want, "alphamoe_route: %s", alphamoe_status_string(s));
        const alphamoe_sizes *z = &plan.sizes;
        CHILD_CHECK(!memcmp(plan.topk_ids, untouched.topk_ids, (size_t)(z->topk_ids.bytes + 4 * TEST_GUARD)) &&
                        !memcmp(plan.topk_weights, untouched.topk_weights, (size_t)(z->topk_weights.bytes + 4 * TEST_GUARD)) &&
                        !memcmp(plan.sorted_token_ids, untouched.sorted_token_ids,
                                (size_t)(z->sorted_token_ids.bytes + 4 * TEST_GUARD)) &&
                        !memcmp(plan.expert_ids, untouched.expert_ids, (size_t)(z->expert_ids.bytes + 4 * TEST_GUARD)) &&
                        !memcmp(plan.num_tokens_post_padded, untouched.num_tokens_post_padded, 4 * (1 + TEST_GUARD)) &&
                        !memcmp(plan.expert_counts, untouched.expert_counts, (size_t)(z->expert_counts.bytes + 4 * TEST_GUARD)) &&
                        !memcmp(plan.expert_offsets, untouched.expert_offsets, (size_t)(z->expert_offsets.bytes + 4 * TEST_GUARD)) &&
                        !memcmp(plan.pair_to_sorted, untouched.pair_to_sorted, (size_t)(z->pair_to_sorted.bytes + 4 * TEST_GUARD)),
                    "an output was written by a call that returned %s", alphamoe_status_string(s));
        for (size_t i = 0; i < ws_bytes; ++i) CHILD_CHECK(workspace[i] == 0x3D, "workspace byte %zu written", i);

        /* The CPU reference needs no driver. */
        s = alphamoe_route_host(router, 40, logits, &plan.buffers);
        CHILD_CHECK(s == ALPHAMOE_OK, "alphamoe_route_host: %s", alphamoe_status_string(s));
        char why[256];
        CHILD_CHECK(validate_plan(&plan, 40, why, sizeof why) == 0, "host plan invalid: %s", why);
        free(workspace);
        free(logits);
        host_plan_free(&plan);
        host_plan_free(&untouched);
        alphamoe_router_destroy(router);
    }
}

typedef struct variant {
    const char *driver;      /* ALPHAMOE_CUDA_DRIVER */
    const char *missing;     /* STUB_MISSING */
    const char *how;         /* STUB_MISSING_HOW */
    const char *init_result; /* STUB_INIT_RESULT */
    const char *device_count;
    alphamoe_status want;
} variant;

/* Runs one variant in a child; fails unless it exits 0 by itself. */
static void run_variant(const variant *v) {
    char what[256];
    snprintf(what, sizeof what, "driver %s, missing %s (%s), cuInit -> %s, devices %s, expecting %s", v->driver,
             v->missing ? v->missing : "-", v->how ? v->how : "-", v->init_result ? v->init_result : "0",
             v->device_count ? v->device_count : "1", alphamoe_status_string(v->want));
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", what);
    if (pid == 0) {
        setenv("ALPHAMOE_CUDA_DRIVER", v->driver, 1);
        if (v->missing) setenv("STUB_MISSING", v->missing, 1);
        if (v->how) setenv("STUB_MISSING_HOW", v->how, 1);
        if (v->init_result) setenv("STUB_INIT_RESULT", v->init_result, 1);
        if (v->device_count) setenv("STUB_DEVICE_COUNT", v->device_count, 1);
        child_body(v->want);
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) fail_msg("waitpid: %s", what);
    if (WIFSIGNALED(status)) fail_msg("%s: the process died of signal %d", what, WTERMSIG(status));
    if (WEXITSTATUS(status) == 42) fail_msg("%s: the library called an entry point past the failure", what);
    if (WEXITSTATUS(status) != 0) fail_msg("%s: exit status %d (see the child's message above)", what, WEXITSTATUS(status));
}

static void missing_get_proc_address(void **state) {
    (void)state;
    const variant v = {ALPHAMOE_STUB_DRIVER_NO_PROC, NULL, NULL, NULL, NULL, ALPHAMOE_ERROR_NO_DRIVER};
    run_variant(&v);
}

static void each_entry_point_missing(void **state) {
    (void)state;
    static const char *const hows[] = {"not_found", "error", "null", "version"};
    int variants = 0;
    for (int i = 0; i < ENTRY_POINT_COUNT; ++i)
        for (size_t h = 0; h < sizeof hows / sizeof hows[0]; ++h, ++variants) {
            const variant v = {ALPHAMOE_STUB_DRIVER, kEntryPoints[i], hows[h], NULL, NULL, ALPHAMOE_ERROR_NO_DRIVER};
            run_variant(&v);
        }
    print_message("# %d drivers each lacking one entry point: ALPHAMOE_ERROR_NO_DRIVER\n", variants);
}

static void init_failures(void **state) {
    (void)state;
    const variant variants[] = {
        {ALPHAMOE_STUB_DRIVER, NULL, NULL, "100", NULL, ALPHAMOE_ERROR_NO_DEVICE},  /* CUDA_ERROR_NO_DEVICE */
        {ALPHAMOE_STUB_DRIVER, NULL, NULL, "34", NULL, ALPHAMOE_ERROR_NO_DRIVER},   /* CUDA_ERROR_STUB_LIBRARY */
        {ALPHAMOE_STUB_DRIVER, NULL, NULL, "803", NULL, ALPHAMOE_ERROR_NO_DRIVER},  /* CUDA_ERROR_SYSTEM_DRIVER_MISMATCH */
        {ALPHAMOE_STUB_DRIVER, NULL, NULL, "999", NULL, ALPHAMOE_ERROR_CUDA},       /* CUDA_ERROR_UNKNOWN */
        {ALPHAMOE_STUB_DRIVER, NULL, NULL, "3", NULL, ALPHAMOE_ERROR_CUDA},         /* CUDA_ERROR_NOT_INITIALIZED */
        {ALPHAMOE_STUB_DRIVER, NULL, NULL, NULL, "0", ALPHAMOE_ERROR_NO_DEVICE},    /* no device */
        {ALPHAMOE_STUB_DRIVER, NULL, NULL, NULL, "-3", ALPHAMOE_ERROR_NO_DEVICE},   /* a nonsense count */
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; ++i) run_variant(&variants[i]);
}

static void not_a_driver(void **state) {
    (void)state;
    /* Missing file, a directory, a text file, a shared library that is no
     * driver (the router itself), and the toolkit's link-time stub libcuda.so. */
    const variant variants[] = {
        {"/nonexistent/libcuda.so.1", NULL, NULL, NULL, NULL, ALPHAMOE_ERROR_NO_DRIVER},
        {"/", NULL, NULL, NULL, NULL, ALPHAMOE_ERROR_NO_DRIVER},
        {ALPHAMOE_TEXT_FILE, NULL, NULL, NULL, NULL, ALPHAMOE_ERROR_NO_DRIVER},
        {ALPHAMOE_OTHER_LIBRARY, NULL, NULL, NULL, NULL, ALPHAMOE_ERROR_NO_DRIVER},
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; ++i) run_variant(&variants[i]);
    struct stat st;
    if (stat(ALPHAMOE_TOOLKIT_STUB, &st) == 0) {
        const variant v = {ALPHAMOE_TOOLKIT_STUB, NULL, NULL, NULL, NULL, ALPHAMOE_ERROR_NO_DRIVER};
        run_variant(&v);
        print_message("# the toolkit's stub %s: ALPHAMOE_ERROR_NO_DRIVER\n", ALPHAMOE_TOOLKIT_STUB);
    } else {
        print_message("# no toolkit stub at %s: that variant not run\n", ALPHAMOE_TOOLKIT_STUB);
    }
}

int main(void) {
    test_base_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(missing_get_proc_address),
        cmocka_unit_test(each_entry_point_missing),
        cmocka_unit_test(init_failures),
        cmocka_unit_test(not_a_driver),
    };
    return cmocka_run_group_tests_name("fault_driver", tests, NULL, NULL);
}
