/* Embedded images, version, and the behaviour without a driver. This suite
 * hides the driver (ALPHAMOE_CUDA_DRIVER points nowhere) before its first
 * call, so it checks the same thing on machines with and without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static const int32_t kExpectedArchs[] = {ALPHAMOE_EXPECTED_ARCHS};
#define EXPECTED_ARCH_COUNT ((int32_t)(sizeof kExpectedArchs / sizeof kExpectedArchs[0]))

static void every_kernel_has_every_configured_arch(void **state) {
    (void)state;
    static const char *const names[] = {
        "tiny_routed", "tiny_shared", "small_routed", "small_shared", "large_routed", "large_shared",
        "tiny_routed_flavours", "tiny_shared_flavours", "small_routed_flavours", "small_shared_flavours",
        "large_routed_flavours", "large_shared_flavours", "tiny_routed_sqrt_softplus", "small_routed_sqrt_softplus",
        "large_routed_sqrt_softplus", "tiny_routed_wide", "tiny_shared_wide", "small_routed_wide", "small_shared_wide",
        "large_routed_wide", "large_shared_wide"};
    const int32_t kernels = alphamoe_kernel_count();
    assert_int_equal(kernels, (int32_t)(sizeof names / sizeof names[0]));
    for (int32_t i = 0; i < kernels; ++i) {
        assert_non_null(alphamoe_kernel_name(i));
        assert_string_equal(alphamoe_kernel_name(i), names[i]);
        int32_t archs[8];
        int32_t count = -1;
        assert_int_equal(alphamoe_kernel_images(i, archs, 8, &count), ALPHAMOE_OK);
        assert_int_equal(count, EXPECTED_ARCH_COUNT);
        for (int32_t a = 0; a < EXPECTED_ARCH_COUNT; ++a) {
            int found = 0;
            for (int32_t b = 0; b < count; ++b) found |= archs[b] == kExpectedArchs[a];
            if (!found) fail_msg("kernel %s has no sm_%da image", names[i], kExpectedArchs[a]);
        }
        /* Counting without storing. */
        int32_t only_count = -1;
        assert_int_equal(alphamoe_kernel_images(i, NULL, 0, &only_count), ALPHAMOE_OK);
        assert_int_equal(only_count, count);
    }
    assert_null(alphamoe_kernel_name(kernels));
    assert_null(alphamoe_kernel_name(-1));
    int32_t count = 0;
    assert_int_equal(alphamoe_kernel_images(kernels, NULL, 0, &count),
                     ALPHAMOE_ERROR_INVALID_ARGUMENT);
    assert_int_equal(alphamoe_kernel_images(0, NULL, 0, NULL), ALPHAMOE_ERROR_NULL_POINTER);
    /* archs 1 to 3 bytes off a 4-byte boundary: refused, nothing written. */
    int32_t words[8];
    for (size_t by = 1; by < 4; ++by) {
        memset(words, 0x77, sizeof words);
        count = -5;
        int32_t *misaligned = (int32_t *)(void *)((char *)words + by);
        assert_int_equal(alphamoe_kernel_images(0, misaligned, 4, &count), ALPHAMOE_ERROR_ALIGNMENT);
        assert_int_equal(count, -5);
        for (int i = 0; i < 8; ++i) assert_int_equal(words[i], 0x77777777);
    }
}

static void version_matches_header(void **state) {
    (void)state;
    assert_int_equal(alphamoe_version_number(), ALPHAMOE_VERSION_NUMBER);
    assert_string_equal(alphamoe_version_string(), ALPHAMOE_VERSION_STRING);
}

static void no_driver_is_a_status(void **state) {
    (void)state;
    int32_t count = 12345;
    assert_int_equal(alphamoe_device_count(&count), ALPHAMOE_ERROR_NO_DRIVER);
    assert_int_equal(count, 12345);
    alphamoe_device_attributes attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.struct_size = sizeof attrs;
    assert_int_equal(alphamoe_device_attributes_query(0, &attrs), ALPHAMOE_ERROR_NO_DRIVER);
    char name[64] = "unchanged";
    int32_t cc = -1, arch = -1;
    assert_int_equal(alphamoe_device_describe(0, name, sizeof name, &cc, &arch), ALPHAMOE_ERROR_NO_DRIVER);
    assert_string_equal(name, "unchanged");

    /* A fully valid call: host buffers stand in for device ones, since the
     * missing driver must stop it before anything is touched. */
    test_rng rng;
    rng_seed(&rng, test_base_seed() ^ 0x1d);
    alphamoe_router *router = make_router(64, 6, 16, 32, ALPHAMOE_FLAG_TAIL_FILL, 0);
    host_plan plan;
    assert_int_equal(host_plan_alloc(&plan, router, 1), 0);
    host_plan_poison(&plan);
    float *logits = malloc(sizeof(float) * 32 * 64);
    assert_non_null(logits);
    fill_logits(&rng, logits, 32, 64, 64, LOGITS_RANDOM, 0);
    void *workspace = aligned_alloc(64, (size_t)plan.sizes.workspace.bytes);
    assert_non_null(workspace);
    memset(workspace, 0x33, (size_t)plan.sizes.workspace.bytes);
    plan.buffers.workspace = workspace;
    plan.buffers.workspace_bytes = (size_t)plan.sizes.workspace.bytes;

    host_plan untouched;
    assert_int_equal(host_plan_alloc(&untouched, router, 1), 0);
    host_plan_poison(&untouched);
    assert_int_equal(alphamoe_route(router, 32, logits, &plan.buffers, NULL), ALPHAMOE_ERROR_NO_DRIVER);
    /* Nothing written: every byte still equals a freshly poisoned plan. */
    assert_memory_equal(plan.topk_ids, untouched.topk_ids, (size_t)(plan.sizes.topk_ids.bytes + 4 * TEST_GUARD));
    assert_memory_equal(plan.topk_weights, untouched.topk_weights, (size_t)(plan.sizes.topk_weights.bytes + 4 * TEST_GUARD));
    assert_memory_equal(plan.sorted_token_ids, untouched.sorted_token_ids,
                        (size_t)(plan.sizes.sorted_token_ids.bytes + 4 * TEST_GUARD));
    assert_memory_equal(plan.expert_ids, untouched.expert_ids, (size_t)(plan.sizes.expert_ids.bytes + 4 * TEST_GUARD));
    assert_int_equal(*plan.num_tokens_post_padded, TEST_POISON_I32);
    for (int64_t i = 0; i < plan.sizes.workspace.bytes; ++i)
        if (((unsigned char *)workspace)[i] != 0x33) fail_msg("workspace byte %lld changed", (long long)i);

    /* The host reference still works without a driver. */
    char why[256];
    assert_int_equal(alphamoe_route_host(router, 32, logits, &plan.buffers), ALPHAMOE_OK);
    assert_int_equal(validate_plan(&plan, 32, why, sizeof why), 0);

    free(workspace);
    free(logits);
    host_plan_free(&untouched);
    host_plan_free(&plan);
    alphamoe_router_destroy(router);
}

int main(void) {
    setenv("ALPHAMOE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_kernel_has_every_configured_arch),
        cmocka_unit_test(version_matches_header),
        cmocka_unit_test(no_driver_is_a_status),
    };
    return cmocka_run_group_tests_name("info", tests, NULL, NULL);
}
