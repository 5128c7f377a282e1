/*
 * Kernel and copy durations from the CUPTI activity API, grouped by the
 * sample that issued them.
 *
 * Work issued between trace_sample_begin(tag) and trace_sample_end() runs
 * inside an external correlation region (cuptiActivityPushExternalCorrelationId):
 * CUPTI emits one external-correlation record for every CUDA runtime or
 * driver API record made there, naming that API call's correlation id; the
 * kernel (CONCURRENT_KERNEL) and copy (MEMCPY) records carry the
 * correlation id of the API call that issued them. So every kernel the
 * library launches through the driver and every kernel or copy the
 * benchmark issues through the runtime is attributed to its sample; work
 * outside a region (the L2-evicting memset) is not attributed to any.
 */
#ifndef ALPHAMOE_BENCH_CUPTI_TRACE_H
#define ALPHAMOE_BENCH_CUPTI_TRACE_H

#include <stdint.h>

typedef struct trace_sample {
    int32_t kernels;         /* kernel records */
    int32_t copies;          /* memcpy records */
    uint64_t kernel_ns;      /* sum over kernels of end - start */
    uint64_t copy_ns;        /* sum over copies of end - start */
    uint64_t copy_bytes;
    uint64_t first_start_ns; /* earliest start of any of its records */
    uint64_t last_end_ns;    /* latest end */
} trace_sample;

/* Registers the buffer callbacks and enables the activity kinds. Call it
 * before the first CUDA context is created, so that nothing is missed. */
int trace_init(void);
/* Flushes and disables everything. */
void trace_shutdown(void);
/* "13.0.1"-style version of the CUPTI library loaded. */
const char *trace_version(void);

/* Disables the activity kinds (for timing that must see no tracing, such
 * as graph replays) and enables them again. */
int trace_pause(void);
int trace_resume(void);

/* Reserves n consecutive tags and returns the first. */
uint64_t trace_reserve_tags(int32_t n);
/* CUPTI's clock, the one its records use (nanoseconds). */
uint64_t trace_now(void);

int trace_sample_begin(uint64_t tag);
int trace_sample_end(void);

/* Flushes CUPTI (every stream with work of these tags must have been
 * synchronized) and fills out[0..n) for tags first_tag..first_tag+n-1.
 * Fails on dropped or incomplete records, and on a record that started
 * well before not_before_ns (trace_now() taken before the samples were
 * issued). */
int trace_collect(uint64_t first_tag, int32_t n, uint64_t not_before_ns, trace_sample *out);

/* One line on what the last trace_collect found, for error messages. */
const char *trace_last_collect(void);

#endif
