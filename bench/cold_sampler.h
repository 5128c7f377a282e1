/*
 * Cold-L2 sampling: before every sample a memset evicts L2 (and, with
 * --cold-code, a kernel evicts the SMs' instruction caches), then the
 * sample's work is issued inside its CUPTI tag; after each round of
 * samples the records are collected and turned into one value per sample.
 */
#ifndef ALPHAMOE_BENCH_COLD_SAMPLER_H
#define ALPHAMOE_BENCH_COLD_SAMPLER_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "bench_device.h"
#include "route_fixture.h"
#include "timing_stats.h"

typedef enum sample_metric {
    METRIC_KERNEL_SUM, /* the sum of the sample's kernel durations */
    METRIC_SPAN,       /* first start to last end of the sample's records */
    METRIC_COPY_SUM    /* the sum of the sample's memcpy durations */
} sample_metric;

/* A record count a workload may give instead of an exact one. */
#define COUNT_AT_LEAST_ONE (-1)

typedef struct workload {
    const char *label; /* names the workload in messages */
    issue_fn issue;    /* one sample's work */
    void *ctx;
    int32_t kernels;   /* kernel records every sample must produce, or COUNT_AT_LEAST_ONE */
    int32_t copies;    /* memcpy records every sample must produce, or COUNT_AT_LEAST_ONE */
    sample_metric metric;
} workload;

typedef struct sampling_plan {
    int32_t warmup;  /* samples issued and checked, not counted */
    int32_t rounds;
    int32_t samples; /* per round */
} sampling_plan;

/* A sample producing other record counts than the workload names is an
 * error: it would mean the figure sums something else. */
int measure_cold(bench_device *d, const workload *w, const sampling_plan *plan, round_stats *out);

#endif
