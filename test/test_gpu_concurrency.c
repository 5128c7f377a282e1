/* Many threads routing at once, as an inference server does: 16 threads,
 * each with 4 streams of its own and a different shape, plan and flags on
 * each stream, released together by a barrier so that the first calls of
 * the process (driver loading, per-device set-up) race. Every result must
 * equal the host reference. The second case does the same with CUDA graphs:
 * each thread captures one graph per stream at the same moment and replays
 * them, with new logits, from its own thread. Each case is its own process
 * (meson test), so its first calls are the process's first; 77 without a
 * GPU. Threads never call cmocka: they record the first failure, the main
 * thread reports it. */
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

enum { THREADS = 16, STREAMS_PER_THREAD = 4, JOBS = THREADS * STREAMS_PER_THREAD, GRAPH_ROUNDS = 6 };

typedef struct job {
    route_case c;
    case_inputs in;
    device_plan plan;
    cudaStream_t stream;
    cudaGraphExec_t graph;
} job;

typedef struct worker {
    int index;
    job *jobs; /* STREAMS_PER_THREAD of them */
    pthread_barrier_t *start;
    int use_graphs;
    uint64_t seed;
    char failure[768];
} worker;

static int worker_fail(worker *w, const char *fmt, ...) {
    if (w->failure[0]) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->failure, sizeof w->failure, fmt, ap);
    va_end(ap);
    return -1;
}

#define W_CUDA(w, call)                                                                           \
    do {                                                                                          \
        const cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) return worker_fail(w, "thread %d: %s: %s", (w)->index, #call,     \
                                                  cudaGetErrorString(e_));                        \
    } while (0)

/* Thread-safe forms of device_plan_poison / device_plan_read (no cmocka). */
static int job_copy(worker *w, job *j, int to_device) {
    device_plan *d = &j->plan;
    output_set mirror = device_plan_mirror(d);
    const alphamoe_sizes *z = &d->mirror.sizes;
    W_CUDA(w, to_device ? outputs_copy(&d->dev, &mirror, z, DEVICE_PLAN_GUARD_BYTES, cudaMemcpyHostToDevice, j->stream)
                        : outputs_copy(&mirror, &d->dev, z, DEVICE_PLAN_GUARD_BYTES, cudaMemcpyDeviceToHost, j->stream));
    return 0;
}

static int job_poison(worker *w, job *j) {
    host_plan_poison(&j->plan.mirror);
    return job_copy(w, j, 1);
}

static int job_check(worker *w, job *j, const char *what) {
    if (job_copy(w, j, 0)) return -1;
    char why[512], desc[256];
    if (compare_plans(&j->in.expected, &j->plan.mirror, j->c.M, WEIGHT_TOLERANCE, why, sizeof why)) {
        describe(&j->c, desc, sizeof desc);
        return worker_fail(w, "thread %d, %s [%s]: %s", w->index, what, desc, why);
    }
    return 0;
}

static int route_job(worker *w, job *j) {
    const alphamoe_status s = alphamoe_route(j->in.router, j->c.M, j->c.M > 0 ? j->in.device_logits : NULL,
                                             &j->plan.buffers, (struct CUstream_st *)j->stream);
    if (s != ALPHAMOE_OK) return worker_fail(w, "thread %d: alphamoe_route: %s", w->index, alphamoe_status_string(s));
    return 0;
}

/* Plain calls: three rounds on each of the thread's streams, interleaved,
 * the very first of them racing the other threads' first calls. */
static int run_calls(worker *w) {
    int poisoned = 0;
    for (int s = 0; s < STREAMS_PER_THREAD; ++s) poisoned |= job_poison(w, &w->jobs[s]);
    pthread_barrier_wait(w->start); /* reached by every thread, or the others would wait forever */
    if (poisoned) return -1;
    for (int round = 0; round < 3; ++round)
        for (int s = 0; s < STREAMS_PER_THREAD; ++s)
            if (route_job(w, &w->jobs[s])) return -1;
    for (int s = 0; s < STREAMS_PER_THREAD; ++s)
        if (job_check(w, &w->jobs[s], "concurrent calls")) return -1;
    return 0;
}

/* Graphs: captured by every thread at once (thread-local capture mode, so
 * that one thread's capture does not forbid another's calls), then
 * replayed with new logits each round. */
static int run_graphs(worker *w) {
    pthread_barrier_wait(w->start);
    for (int s = 0; s < STREAMS_PER_THREAD; ++s) {
        job *j = &w->jobs[s];
        cudaGraph_t graph;
        W_CUDA(w, cudaStreamBeginCapture(j->stream, cudaStreamCaptureModeThreadLocal));
        const int routed = route_job(w, j);
        W_CUDA(w, cudaStreamEndCapture(j->stream, &graph));
        if (routed) return -1;
        W_CUDA(w, cudaGraphInstantiate(&j->graph, graph, 0));
        W_CUDA(w, cudaGraphDestroy(graph));
    }
    test_rng rng;
    rng_seed(&rng, w->seed);
    for (int round = 0; round < GRAPH_ROUNDS; ++round) {
        for (int s = 0; s < STREAMS_PER_THREAD; ++s) {
            job *j = &w->jobs[s];
            fill_logits(&rng, j->in.logits, j->c.M, j->c.E, j->in.stride, (logit_pattern)((round + s) % LOGITS_PATTERN_COUNT),
                        (int32_t)rng_below(&rng, (uint32_t)j->c.E));
            host_plan_poison(&j->in.expected);
            const alphamoe_status st = alphamoe_route_host(j->in.router, j->c.M, j->in.logits, &j->in.expected.buffers);
            if (st != ALPHAMOE_OK) return worker_fail(w, "host reference: %s", alphamoe_status_string(st));
            if (j->c.M > 0)
                W_CUDA(w, cudaMemcpyAsync(j->in.device_logits, j->in.logits, (size_t)(j->c.M * j->in.stride) * 4u,
                                          cudaMemcpyHostToDevice, j->stream));
            if (job_poison(w, j)) return -1;
            W_CUDA(w, cudaGraphLaunch(j->graph, j->stream));
        }
        for (int s = 0; s < STREAMS_PER_THREAD; ++s)
            if (job_check(w, &w->jobs[s], "graph replayed from its thread")) return -1;
    }
    for (int s = 0; s < STREAMS_PER_THREAD; ++s) W_CUDA(w, cudaGraphExecDestroy(w->jobs[s].graph));
    return 0;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    if (w->use_graphs) run_graphs(w);
    else run_calls(w);
    return NULL;
}

/* 64 different shapes: every specialization, routed and shared, optional
 * outputs on and off, tail fill, strides, PDL. */
static route_case job_case(int i, test_rng *rng) {
    static const int32_t shapes[][3] = {{512, 10, 8}, {64, 6, 16}, {128, 8, 64}, {257, 16, 3},
                                        {16, 4, 1},   {8, 2, 256}, {384, 8, 32}, {60, 4, 128}};
    static const int32_t tokens[] = {1, 7, 16, 40, 300, 512, 1200, 4000};
    const int s = i % 8;
    const int32_t E = shapes[s][0], k = shapes[s][1];
    uint32_t flags = (i / 8) % 2 ? ALPHAMOE_FLAG_TAIL_FILL : 0u;
    if ((i / 16) % 2 && k >= 2) flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
    if ((i / 32) % 2) flags |= ALPHAMOE_FLAG_PDL;
    const route_case c = {E, k, shapes[s][2], tokens[(i * 5 + i / 8) % 8], (int32_t)rng_below(rng, 100), flags,
                          (i / 3) % 4, (logit_pattern)(i % LOGITS_PATTERN_COUNT), i % 5 == 0 ? E + 3 : 0, (i / 2) % 2, 0};
    return c;
}

static void run_all(int use_graphs, uint64_t salt) {
    test_rng rng = case_rng(salt);
    job *jobs = calloc(JOBS, sizeof *jobs);
    assert_non_null(jobs);
    for (int i = 0; i < JOBS; ++i) {
        jobs[i].c = job_case(i, &rng);
        inputs_make(&jobs[i].in, &jobs[i].c, &rng);
        device_plan_alloc(&jobs[i].plan, jobs[i].in.router, jobs[i].c.with_optional);
        CUDA_OK(cudaStreamCreateWithFlags(&jobs[i].stream, cudaStreamNonBlocking));
    }
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; ++t) {
        workers[t] = (worker){t, &jobs[t * STREAMS_PER_THREAD], &start, use_graphs, rng_next(&rng), ""};
        assert_int_equal(pthread_create(&threads[t], NULL, worker_main, &workers[t]), 0);
    }
    for (int t = 0; t < THREADS; ++t) assert_int_equal(pthread_join(threads[t], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int t = 0; t < THREADS; ++t)
        if (workers[t].failure[0]) fail_msg("%s", workers[t].failure);
    for (int i = 0; i < JOBS; ++i) {
        CUDA_OK(cudaStreamDestroy(jobs[i].stream));
        device_plan_free(&jobs[i].plan);
        inputs_free(&jobs[i].in);
    }
    free(jobs);
    print_message("# %d threads x %d streams, %s: every result equal to the host reference\n", THREADS,
                  STREAMS_PER_THREAD, use_graphs ? "graphs captured at once, each replayed 6 times with new logits"
                                                 : "3 calls per stream, first calls racing");
}

static void gpu_concurrency_threads_and_streams(void **state) {
    (void)state;
    run_all(0, 0x5301);
}

static void gpu_concurrency_graphs(void **state) {
    (void)state;
    run_all(1, 0x5302);
}

int main(int argc, char **argv) {
    if (gpu_skip_without_device()) return SKIP_RETURN_CODE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_concurrency_threads_and_streams),
        cmocka_unit_test(gpu_concurrency_graphs),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("gpu_concurrency", tests, NULL, NULL);
}
