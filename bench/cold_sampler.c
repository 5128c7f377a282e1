#include "cold_sampler.h"

#include <stdbool.h>
#include <stdlib.h>

#include "bench_check.h"
#include "cupti_trace.h"

static int issue_tagged(bench_device *d, const workload *w, uint64_t tag) {
    TRY(device_evict_caches(d));
    TRY(trace_sample_begin(tag));
    const int rc = w->issue(w->ctx, d->stream);
    /* The tag region is closed even when the work failed. */
    const int end = trace_sample_end();
    return rc != 0 || end != 0 ? -1 : 0;
}

static double sample_value(const trace_sample *s, sample_metric metric) {
    switch (metric) {
    case METRIC_SPAN: return (double)(s->last_end_ns - s->first_start_ns) * 1e-3;
    case METRIC_COPY_SUM: return (double)s->copy_ns * 1e-3;
    default: return (double)s->kernel_ns * 1e-3;
    }
}

static bool count_matches(int32_t got, int32_t expected) {
    return expected == COUNT_AT_LEAST_ONE ? got >= 1 : got == expected;
}

static int check_counts(const workload *w, const trace_sample *s, int32_t index) {
    if (count_matches(s->kernels, w->kernels) && count_matches(s->copies, w->copies)) return 0;
    fprintf(stderr,
            BENCH_PROG ": %s: sample %d produced %d kernel and %d memcpy record(s) in CUPTI, expected %d and %d "
                       "(-1: at least one)\n",
            w->label, (int)index, (int)s->kernels, (int)s->copies, (int)w->kernels, (int)w->copies);
    fprintf(stderr, BENCH_PROG ": CUPTI, this round: %s\n", trace_last_collect());
    return -1;
}

/* Issues n samples, collects them and writes their values (us). */
static int run_round(bench_device *d, const workload *w, int32_t n, double *values) {
    trace_sample *traced = malloc((size_t)n * sizeof(*traced));
    if (traced == NULL) {
        fprintf(stderr, BENCH_PROG ": out of host memory\n");
        return -1;
    }
    int rc = 0;
    const uint64_t first_tag = trace_reserve_tags(n);
    if (cudaStreamSynchronize(d->stream) != cudaSuccess) rc = -1;
    const uint64_t not_before = trace_now();
    for (int32_t i = 0; rc == 0 && i < n; ++i) rc = issue_tagged(d, w, first_tag + (uint64_t)i);
    /* Every record complete before the flush. */
    const cudaError_t sync = cudaDeviceSynchronize();
    if (sync != cudaSuccess) {
        fprintf(stderr, BENCH_PROG ": %s: cudaDeviceSynchronize failed: %s: %s\n", w->label, cudaGetErrorName(sync),
                cudaGetErrorString(sync));
        rc = -1;
    }
    /* Collected even after a failure, so no record is left for the next round. */
    const int collected = trace_collect(first_tag, n, not_before, traced);
    if (rc == 0) rc = collected;
    for (int32_t i = 0; rc == 0 && i < n; ++i) {
        rc = check_counts(w, &traced[i], i);
        values[i] = sample_value(&traced[i], w->metric);
    }
    free(traced);
    return rc;
}

int measure_cold(bench_device *d, const workload *w, const sampling_plan *plan, round_stats *out) {
    const int32_t per_round = plan->samples > plan->warmup ? plan->samples : plan->warmup;
    double *values = malloc((size_t)per_round * sizeof(double));
    double *medians = malloc((size_t)plan->rounds * sizeof(double));
    int rc = values && medians ? 0 : -1;
    if (rc != 0) fprintf(stderr, BENCH_PROG ": out of host memory\n");
    if (rc == 0 && plan->warmup > 0) rc = run_round(d, w, plan->warmup, values);
    double best = 0.0;
    for (int32_t r = 0; rc == 0 && r < plan->rounds; ++r) {
        rc = run_round(d, w, plan->samples, values);
        if (rc != 0) break;
        for (int32_t i = 0; i < plan->samples; ++i)
            if ((r == 0 && i == 0) || values[i] < best) best = values[i];
        medians[r] = median_of(values, plan->samples);
    }
    if (rc == 0) stats_from_rounds(medians, plan->rounds, plan->samples, best, out);
    free(values);
    free(medians);
    return rc;
}
