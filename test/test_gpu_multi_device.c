/* Two GPUs of one host: threads route on both at once (their first calls
 * racing on both devices), some of them with the other device current, and
 * a NULL stream with device 1 current routes on device 1. The per-device
 * state must never be mixed up: every result equals the host reference and
 * each device reports its own attributes. Skipped (77) with fewer than two
 * devices. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_plan.h"
#include "test_support.h"

enum { JOBS_PER_DEVICE = 6, CALLS = 4 };

typedef struct job {
    int device;  /* owns the stream and every buffer */
    int current; /* the device current in the calling thread */
    route_case c;
    case_inputs in;
    device_plan plan;
    cudaStream_t stream;
    pthread_barrier_t *start;
    alphamoe_status status;
    cudaError_t cuda_status;
} job;

static void *job_main(void *arg) {
    job *j = arg;
    j->cuda_status = cudaSetDevice(j->current);
    pthread_barrier_wait(j->start);
    if (j->cuda_status != cudaSuccess) return NULL;
    j->status = ALPHAMOE_OK;
    for (int call = 0; call < CALLS && j->status == ALPHAMOE_OK; ++call)
        j->status = alphamoe_route(j->in.router, j->c.M, j->in.device_logits, &j->plan.buffers,
                                   (struct CUstream_st *)j->stream);
    j->cuda_status = cudaStreamSynchronize(j->stream);
    return NULL;
}

static void gpu_two_devices(void **state) {
    (void)state;
    test_rng rng = case_rng(0x6101);
    job jobs[2 * JOBS_PER_DEVICE];
    pthread_t threads[2 * JOBS_PER_DEVICE];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2 * JOBS_PER_DEVICE);
    static const int32_t shapes[][3] = {{512, 10, 8}, {64, 6, 16}, {257, 16, 3}};
    static const int32_t tokens[] = {5, 300, 3000};
    for (int i = 0; i < 2 * JOBS_PER_DEVICE; ++i) {
        job *j = &jobs[i];
        memset(j, 0, sizeof *j);
        j->device = i % 2;
        /* Every third job calls with the other device current. */
        j->current = i % 3 == 0 ? 1 - j->device : j->device;
        const int s = (i / 2) % 3;
        const route_case c = {shapes[s][0], shapes[s][1], shapes[s][2], tokens[(i / 2 + i) % 3], 0,
                              i % 4 == 1 ? ALPHAMOE_FLAG_SHARED_EXPERT : ALPHAMOE_FLAG_TAIL_FILL, (i / 2) % 4,
                              LOGITS_RANDOM, 0, 1, 0};
        j->c = c;
        CUDA_OK(cudaSetDevice(j->device));
        inputs_make(&j->in, &j->c, &rng);
        device_plan_alloc(&j->plan, j->in.router, 1);
        CUDA_OK(cudaStreamCreateWithFlags(&j->stream, cudaStreamNonBlocking));
        device_plan_poison(&j->plan, j->stream);
        j->start = &start;
        j->status = ALPHAMOE_ERROR_CUDA;
    }
    for (int i = 0; i < 2 * JOBS_PER_DEVICE; ++i)
        assert_int_equal(pthread_create(&threads[i], NULL, job_main, &jobs[i]), 0);
    for (int i = 0; i < 2 * JOBS_PER_DEVICE; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 2 * JOBS_PER_DEVICE; ++i) {
        job *j = &jobs[i];
        char label[96];
        snprintf(label, sizeof label, "stream of device %d, device %d current", j->device, j->current);
        if (j->cuda_status != cudaSuccess) fail_msg("%s: %s", label, cudaGetErrorString(j->cuda_status));
        if (j->status != ALPHAMOE_OK) fail_msg("%s: alphamoe_route: %s", label, alphamoe_status_string(j->status));
        CUDA_OK(cudaSetDevice(j->device));
        device_plan_read(&j->plan, j->stream);
        check_against(&j->in.expected, &j->plan, &j->c, label);
    }

    /* The NULL stream means the current context's: with device 1 current a
     * call on device 1's buffers routes on device 1. */
    for (int i = 0; i < 2 * JOBS_PER_DEVICE; ++i) {
        job *j = &jobs[i];
        CUDA_OK(cudaSetDevice(j->device));
        device_plan_poison(&j->plan, 0);
        ROUTE_OK(alphamoe_route(j->in.router, j->c.M, j->in.device_logits, &j->plan.buffers, NULL));
        CUDA_OK(cudaDeviceSynchronize());
        device_plan_read(&j->plan, 0);
        char label[64];
        snprintf(label, sizeof label, "NULL stream with device %d current", j->device);
        check_against(&j->in.expected, &j->plan, &j->c, label);
    }

    /* Each device's attributes are its own. */
    for (int dev = 0; dev < 2; ++dev) {
        struct cudaDeviceProp prop;
        CUDA_OK(cudaGetDeviceProperties(&prop, dev));
        alphamoe_device_attributes a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        ROUTE_OK(alphamoe_device_attributes_query(dev, &a));
        assert_int_equal(a.compute_capability, prop.major * 10 + prop.minor);
        assert_int_equal(a.multiprocessor_count, prop.multiProcessorCount);
        print_message("# device %d: %s, %d SMs, %d router CTAs per SM\n", dev, prop.name, a.multiprocessor_count,
                      a.cooperative_ctas_per_sm);
    }
    for (int i = 0; i < 2 * JOBS_PER_DEVICE; ++i) {
        CUDA_OK(cudaSetDevice(jobs[i].device));
        CUDA_OK(cudaStreamDestroy(jobs[i].stream));
        device_plan_free(&jobs[i].plan);
        inputs_free(&jobs[i].in);
    }
    print_message("# %d jobs on 2 devices at once, %d of them with the other device current: exact\n",
                  2 * JOBS_PER_DEVICE, (2 * JOBS_PER_DEVICE + 2) / 3);
}

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) {
        printf("SKIP: %d CUDA device(s) visible: this test needs two\n", devices);
        return SKIP_RETURN_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_two_devices),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("gpu_multi_device", tests, NULL, NULL);
}
