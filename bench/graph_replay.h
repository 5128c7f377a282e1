/*
 * Per-call time as a serving engine sees it: `calls` back-to-back issues
 * of the work captured into one CUDA graph, the graph replayed, each
 * replay timed with CUDA events; per call = median replay / calls. CUPTI
 * tracing is paused meanwhile, so nothing of it is in these figures; L2 is
 * not evicted between calls.
 */
#ifndef ALPHAMOE_BENCH_GRAPH_REPLAY_H
#define ALPHAMOE_BENCH_GRAPH_REPLAY_H

#include <stdint.h>

#include "bench_device.h"
#include "cold_sampler.h"

#define GRAPH_CALLS 100

int graph_per_call(bench_device *d, issue_fn issue, void *ctx, int32_t calls, int32_t replays, double *per_call_us);

#endif
