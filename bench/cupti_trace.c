#include "cupti_trace.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "bench_check.h"

/* The record layouts of this CUPTI generation: CUDA 13 reports kernels as
 * CUpti_ActivityKernel10 and copies as CUpti_ActivityMemcpy6, CUDA 12 as
 * CUpti_ActivityKernel9 and CUpti_ActivityMemcpy5. */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_record;
typedef CUpti_ActivityMemcpy6 memcpy_record;
#define RECORD_GENERATION_13 1
#else
typedef CUpti_ActivityKernel9 kernel_record;
typedef CUpti_ActivityMemcpy5 memcpy_record;
#define RECORD_GENERATION_13 0
#endif

/* CUPTI asks for 1 to 10 MiB buffers; records must be 8-byte aligned. */
#define TRACE_BUFFER_BYTES (8u << 20)
#define TRACE_RECORD_ALIGN 8u

#define EXTERNAL_KIND CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0

#define CLOCK_SLACK_NS 1000000ull

#define CUPTI_TRY(call)                                                                            \
    do {                                                                                           \
        const CUptiResult result_ = (call);                                                        \
        if (result_ != CUPTI_SUCCESS) {                                                            \
            const char *text_ = NULL;                                                              \
            cuptiGetResultString(result_, &text_);                                                 \
            fprintf(stderr, BENCH_PROG ": %s failed: %s\n", #call, text_ ? text_ : "unknown error"); \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

typedef enum entry_type {
    ENTRY_KERNEL,
    ENTRY_COPY,
    ENTRY_LINK /* external correlation: correlation id -> tag */
} entry_type;

/* What the benchmark keeps of a record. */
typedef struct trace_entry {
    entry_type type;
    uint32_t correlation;
    uint64_t tag;
    uint64_t start, end, bytes;
} trace_entry;

/* Written by CUPTI's delivery thread, read by the benchmark's. */
static struct {
    pthread_mutex_t lock;
    trace_entry *entries;
    size_t count, capacity;
    size_t dropped;
    bool out_of_memory;
    bool bad_buffer;
    uint64_t next_tag;
    char version[32];
    char last_collect[160]; /* what the last trace_collect saw, for messages */
} g_trace = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, false, false, 1, "", ""};

static const CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, /* kernels without serializing them */
    CUPTI_ACTIVITY_KIND_MEMCPY,
    /* API records: external correlation records are emitted per API record */
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};
#define KIND_COUNT (sizeof(kKinds) / sizeof(kKinds[0]))

static void append_locked(const trace_entry *e) {
    if (g_trace.count == g_trace.capacity) {
        const size_t capacity = g_trace.capacity ? 2 * g_trace.capacity : 4096;
        trace_entry *grown = realloc(g_trace.entries, capacity * sizeof(*grown));
        if (grown == NULL) {
            g_trace.out_of_memory = true;
            return;
        }
        g_trace.entries = grown;
        g_trace.capacity = capacity;
    }
    g_trace.entries[g_trace.count++] = *e;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    /* A NULL buffer makes CUPTI drop records, which trace_collect reports. */
    *buffer = aligned_alloc(TRACE_RECORD_ALIGN, TRACE_BUFFER_BYTES);
    *size = *buffer ? TRACE_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void keep_record(const CUpti_Activity *record) {
    trace_entry e;
    memset(&e, 0, sizeof(e));
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        const kernel_record *k = (const kernel_record *)record;
        e.type = ENTRY_KERNEL;
        e.correlation = k->correlationId;
        e.start = k->start;
        e.end = k->end;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const memcpy_record *m = (const memcpy_record *)record;
        e.type = ENTRY_COPY;
        e.correlation = m->correlationId;
        e.start = m->start;
        e.end = m->end;
        e.bytes = m->bytes;
        break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)record;
        if (x->externalKind != EXTERNAL_KIND) return;
        e.type = ENTRY_LINK;
        e.correlation = x->correlationId;
        e.tag = x->externalId;
        break;
    }
    default:
        return; /* API records: needed only for the links above */
    }
    append_locked(&e);
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t *buffer, size_t size,
                                      size_t valid_size) {
    (void)size;
    pthread_mutex_lock(&g_trace.lock);
    if (buffer != NULL && valid_size > 0) {
        CUpti_Activity *record = NULL;
        CUptiResult r;
        while ((r = cuptiActivityGetNextRecord(buffer, valid_size, &record)) == CUPTI_SUCCESS) keep_record(record);
        if (r != CUPTI_ERROR_MAX_LIMIT_REACHED) g_trace.bad_buffer = true;
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) g_trace.dropped += dropped;
    pthread_mutex_unlock(&g_trace.lock);
    free(buffer);
}

const char *trace_version(void) { return g_trace.version; }

const char *trace_last_collect(void) { return g_trace.last_collect; }

int trace_init(void) {
    uint32_t version = 0;
    CUPTI_TRY(cuptiGetVersion(&version));
    if (version >= 130000)
        snprintf(g_trace.version, sizeof(g_trace.version), "%u.%u (API %u)", version / 10000, version / 100 % 100,
                 version);
    else
        snprintf(g_trace.version, sizeof(g_trace.version), "API %u", version);
    /* The record structs above are those of the headers; a library of
     * another generation would lay them out differently. */
    if ((version >= 130000) != RECORD_GENERATION_13) {
        fprintf(stderr,
                BENCH_PROG ": the CUPTI library loaded (API version %u) is of another generation than the "
                           "headers it was built with (API version %d): record layouts differ\n",
                version, CUPTI_API_VERSION);
        return -1;
    }
    CUPTI_TRY(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    return trace_resume();
}

int trace_resume(void) {
    for (size_t i = 0; i < KIND_COUNT; ++i) CUPTI_TRY(cuptiActivityEnable(kKinds[i]));
    return 0;
}

int trace_pause(void) {
    for (size_t i = 0; i < KIND_COUNT; ++i) CUPTI_TRY(cuptiActivityDisable(kKinds[i]));
    return 0;
}

void trace_shutdown(void) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (size_t i = 0; i < KIND_COUNT; ++i) cuptiActivityDisable(kKinds[i]);
    pthread_mutex_lock(&g_trace.lock);
    free(g_trace.entries);
    g_trace.entries = NULL;
    g_trace.count = g_trace.capacity = 0;
    pthread_mutex_unlock(&g_trace.lock);
}

uint64_t trace_reserve_tags(int32_t n) {
    const uint64_t first = g_trace.next_tag;
    g_trace.next_tag += (uint64_t)n;
    return first;
}

uint64_t trace_now(void) {
    uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
}

int trace_sample_begin(uint64_t tag) {
    CUPTI_TRY(cuptiActivityPushExternalCorrelationId(EXTERNAL_KIND, tag));
    return 0;
}

int trace_sample_end(void) {
    uint64_t tag = 0;
    CUPTI_TRY(cuptiActivityPopExternalCorrelationId(EXTERNAL_KIND, &tag));
    return 0;
}

typedef struct link {
    uint32_t correlation;
    uint64_t tag;
} link;

static int compare_links(const void *a, const void *b) {
    const uint32_t x = ((const link *)a)->correlation, y = ((const link *)b)->correlation;
    return (x > y) - (x < y);
}

/* Takes every entry delivered so far; the caller frees them. */
static trace_entry *take_entries(size_t *count, size_t *dropped, bool *broken) {
    pthread_mutex_lock(&g_trace.lock);
    trace_entry *entries = g_trace.entries;
    *count = g_trace.count;
    *dropped = g_trace.dropped;
    *broken = g_trace.out_of_memory || g_trace.bad_buffer;
    g_trace.entries = NULL;
    g_trace.count = g_trace.capacity = 0;
    g_trace.dropped = 0;
    g_trace.out_of_memory = g_trace.bad_buffer = false;
    pthread_mutex_unlock(&g_trace.lock);
    return entries;
}

/* The links of tags [first_tag, first_tag + n), sorted by correlation id. */
static link *links_in_range(const trace_entry *entries, size_t count, uint64_t first_tag, int32_t n,
                            size_t *link_count) {
    link *links = malloc((count ? count : 1) * sizeof(*links));
    if (links == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < count; ++i)
        if (entries[i].type == ENTRY_LINK && entries[i].tag >= first_tag && entries[i].tag - first_tag < (uint64_t)n)
            links[k++] = (link){entries[i].correlation, entries[i].tag};
    qsort(links, k, sizeof(*links), compare_links);
    *link_count = k;
    return links;
}

static int add_to_sample(const trace_entry *e, uint64_t not_before_ns, trace_sample *s) {
    if (e->start == 0 || e->end < e->start) {
        fprintf(stderr, BENCH_PROG ": CUPTI delivered an incomplete %s record (start %llu, end %llu)\n",
                e->type == ENTRY_KERNEL ? "kernel" : "memcpy", (unsigned long long)e->start,
                (unsigned long long)e->end);
        return -1;
    }
    /* GPU records and cuptiGetTimestamp share one clock; the slack only
     * absorbs its normalization, a stale record would be far older. */
    if (e->start + CLOCK_SLACK_NS < not_before_ns) {
        fprintf(stderr, BENCH_PROG ": a %s record starts %llu ns before its sample was issued\n",
                e->type == ENTRY_KERNEL ? "kernel" : "memcpy", (unsigned long long)(not_before_ns - e->start));
        return -1;
    }
    if (e->type == ENTRY_KERNEL) {
        s->kernels += 1;
        s->kernel_ns += e->end - e->start;
    } else {
        s->copies += 1;
        s->copy_ns += e->end - e->start;
        s->copy_bytes += e->bytes;
    }
    if (e->start < s->first_start_ns) s->first_start_ns = e->start;
    if (e->end > s->last_end_ns) s->last_end_ns = e->end;
    return 0;
}

int trace_collect(uint64_t first_tag, int32_t n, uint64_t not_before_ns, trace_sample *out) {
    CUPTI_TRY(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    size_t count = 0, dropped = 0;
    bool broken = false;
    trace_entry *entries = take_entries(&count, &dropped, &broken);
    int rc = 0;
    if (dropped > 0 || broken) {
        fprintf(stderr, BENCH_PROG ": CUPTI lost activity records (%zu dropped%s): the samples are incomplete\n",
                dropped, broken ? ", or a buffer could not be read or kept" : "");
        rc = -1;
    }
    size_t link_count = 0;
    link *links = rc == 0 ? links_in_range(entries, count, first_tag, n, &link_count) : NULL;
    if (rc == 0 && links == NULL) {
        fprintf(stderr, BENCH_PROG ": out of host memory sorting CUPTI records\n");
        rc = -1;
    }
    for (int32_t i = 0; i < n; ++i) {
        memset(&out[i], 0, sizeof(out[i]));
        out[i].first_start_ns = UINT64_MAX;
    }
    size_t untagged = 0, tagged = 0;
    for (size_t i = 0; rc == 0 && i < count; ++i) {
        const trace_entry *e = &entries[i];
        if (e->type == ENTRY_LINK) continue;
        const link key = {e->correlation, 0};
        const link *found = bsearch(&key, links, link_count, sizeof(*links), compare_links);
        if (found == NULL) { /* untagged work, such as a set-up copy */
            ++untagged;
            continue;
        }
        ++tagged;
        rc = add_to_sample(e, not_before_ns, &out[found->tag - first_tag]);
    }
    snprintf(g_trace.last_collect, sizeof(g_trace.last_collect),
             "%zu records delivered: %zu external-correlation links to these samples, %zu kernel/memcpy records "
             "matched, %zu not",
             count, link_count, tagged, untagged);
    free(links);
    free(entries);
    return rc;
}
