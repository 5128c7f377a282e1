/*
 * The floors of the same run, the least any launch of a kind can cost:
 *   - an empty kernel (one CTA): launch and teardown; and per call in a
 *     CUDA graph of GRAPH_CALLS back-to-back launches, the floor of the
 *     shapes' graph/call figures;
 *   - one CTA whose warp 0 reads one E512 row of logits and stores its
 *     maximum: a launch, a memory round trip and a store that waits for
 *     it, the least any router call costs (one token at least);
 *   - the same CTA with FLOOR_FEW_ROWS warps reading a row each: the least
 *     a call of that many tokens costs, its rows read as the tiny kernel
 *     reads them (a token a warp);
 *   - a cooperative kernel of one CTA per multiprocessor crossing one grid
 *     barrier: what a cooperative router pays before any work;
 *   - a device-to-device copy of the largest logits buffer (E512, M16384):
 *     its rate gives each shape's bandwidth floor, logits bytes / rate;
 *   - a read of the E512 logits of M4096 and of M16384 tokens, each byte
 *     once, by a kernel that does nothing else: what reading a shape's
 *     logits alone costs after the L2 eviction, which the copy's rate does
 *     not say (a cold read of a buffer runs below the copy's rate); each
 *     read twice, by loads and by the bulk copy engine, the faster being
 *     the hardware's floor rather than one kernel's.
 * All are cold-L2 CUPTI durations, like the router's.
 */
#ifndef ALPHAMOE_BENCH_FLOORS_H
#define ALPHAMOE_BENCH_FLOORS_H

#include <stdint.h>

#include "bench_device.h"
#include "cold_sampler.h"
#include "timing_stats.h"

/* The experts of the logits the copy and the reads move (E512, fp32). */
#define FLOOR_EXPERTS 512

/* The few-rows floor's rows: the eight-token shape's. */
#define FLOOR_FEW_ROWS 8

/* E512 x M16384 FP32 logits. */
#define FLOOR_COPY_BYTES ((int64_t)16384 * FLOOR_EXPERTS * 4)

/* The read floors' buffers: E512 logits of this many tokens. */
#define READ_FLOOR_COUNT 2
#define READ_FLOOR_TOKENS {4096, 16384}

typedef struct read_floor {
    int32_t tokens; /* E512 FP32 logits of this many tokens */
    int64_t bytes;
    round_stats read;
    round_stats bulk; /* the same bytes through the bulk copy engine */
} read_floor;

typedef struct floor_figures {
    round_stats empty;
    double empty_graph_per_call_us;
    round_stats one_row;
    round_stats few_rows; /* FLOOR_FEW_ROWS rows */
    round_stats barrier;
    int32_t barrier_ctas;
    round_stats copy;
    int64_t copy_bytes;
    double copy_bytes_per_us; /* copy_bytes / copy.median_us */
    read_floor reads[READ_FLOOR_COUNT];
} floor_figures;

int measure_floors(bench_device *d, const sampling_plan *plan, int32_t graph_replays, floor_figures *out);

/* bytes / the measured copy rate. */
double bandwidth_floor_us(const floor_figures *f, int64_t bytes);

#endif
