#include "graph_replay.h"

#include <stdlib.h>

#include "bench_check.h"
#include "cupti_trace.h"
#include "timing_stats.h"

/* Replays before timing: the first uploads the graph and warms the path. */
#define GRAPH_WARMUP_REPLAYS 2

static int capture(bench_device *d, issue_fn issue, void *ctx, int32_t calls, cudaGraph_t *graph) {
    CUDA_TRY(cudaStreamBeginCapture(d->stream, cudaStreamCaptureModeGlobal));
    int rc = 0;
    for (int32_t i = 0; rc == 0 && i < calls; ++i) rc = issue(ctx, d->stream);
    /* Ends the capture even after a failed issue, leaving the stream usable. */
    const cudaError_t end = cudaStreamEndCapture(d->stream, graph);
    if (rc != 0) {
        if (end == cudaSuccess) cudaGraphDestroy(*graph);
        return -1;
    }
    CUDA_TRY(end);
    return 0;
}

static int time_replays(bench_device *d, cudaGraphExec_t exec, int32_t replays, double *replay_us) {
    for (int32_t i = 0; i < GRAPH_WARMUP_REPLAYS; ++i) CUDA_TRY(cudaGraphLaunch(exec, d->stream));
    CUDA_TRY(cudaStreamSynchronize(d->stream));
    for (int32_t r = 0; r < replays; ++r) {
        CUDA_TRY(cudaEventRecord(d->start, d->stream));
        CUDA_TRY(cudaGraphLaunch(exec, d->stream));
        CUDA_TRY(cudaEventRecord(d->stop, d->stream));
        CUDA_TRY(cudaEventSynchronize(d->stop));
        float ms = 0.0f;
        CUDA_TRY(cudaEventElapsedTime(&ms, d->start, d->stop));
        replay_us[r] = (double)ms * 1000.0;
    }
    return 0;
}

static int replay(bench_device *d, issue_fn issue, void *ctx, int32_t calls, int32_t replays, double *replay_us) {
    cudaGraph_t graph = NULL;
    TRY(capture(d, issue, ctx, calls, &graph));
    cudaGraphExec_t exec = NULL;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    int rc = 0;
    if (inst != cudaSuccess) {
        fprintf(stderr, BENCH_PROG ": cudaGraphInstantiate failed: %s: %s\n", cudaGetErrorName(inst),
                cudaGetErrorString(inst));
        rc = -1;
    }
    if (rc == 0) rc = time_replays(d, exec, replays, replay_us);
    if (exec) cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return rc;
}

int graph_per_call(bench_device *d, issue_fn issue, void *ctx, int32_t calls, int32_t replays, double *per_call_us) {
    double *replay_us = malloc((size_t)replays * sizeof(double));
    if (replay_us == NULL) {
        fprintf(stderr, BENCH_PROG ": out of host memory\n");
        return -1;
    }
    if (trace_pause() != 0) {
        free(replay_us);
        return -1;
    }
    int rc = replay(d, issue, ctx, calls, replays, replay_us);
    if (trace_resume() != 0) rc = -1;
    if (rc == 0) *per_call_us = median_of(replay_us, replays) / (double)calls;
    free(replay_us);
    return rc;
}
