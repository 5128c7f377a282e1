#include "floors.h"

#include <string.h>

#include "bench_check.h"
#include "floor_kernels.h"
#include "graph_replay.h"

typedef struct barrier_ctx {
    int32_t ctas;
    uint32_t *workspace;
} barrier_ctx;

typedef struct copy_ctx {
    void *src, *dst;
    size_t bytes;
} copy_ctx;

typedef struct read_ctx {
    int32_t sm_count;
    const void *src;
    int64_t bytes;
    float *out;
} read_ctx;

static int issue_empty(void *ctx, cudaStream_t s) {
    (void)ctx;
    CUDA_TRY(launch_empty_floor(s));
    return 0;
}

typedef struct row_ctx {
    float *rows, *out;
    int32_t n_rows;
} row_ctx;

static int issue_rows(void *ctx, cudaStream_t s) {
    const row_ctx *r = ctx;
    if (r->n_rows == 1)
        CUDA_TRY(launch_one_row_floor(s, r->rows, r->out));
    else
        CUDA_TRY(launch_rows_floor(s, r->rows, r->n_rows, r->out));
    return 0;
}

static int issue_barrier(void *ctx, cudaStream_t s) {
    const barrier_ctx *b = ctx;
    CUDA_TRY(launch_grid_barrier_floor(s, b->ctas, b->workspace));
    return 0;
}

static int issue_copy(void *ctx, cudaStream_t s) {
    const copy_ctx *c = ctx;
    CUDA_TRY(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, s));
    return 0;
}

static int issue_read(void *ctx, cudaStream_t s) {
    const read_ctx *r = ctx;
    CUDA_TRY(launch_read_floor(s, r->sm_count, r->src, r->bytes, r->out));
    return 0;
}

static int issue_read_bulk(void *ctx, cudaStream_t s) {
    const read_ctx *r = ctx;
    CUDA_TRY(launch_read_bulk_floor(s, r->sm_count, r->src, r->bytes, r->out));
    return 0;
}

static int measure_empty(bench_device *d, const sampling_plan *plan, int32_t graph_replays, floor_figures *out) {
    const workload w = {"empty-kernel floor", issue_empty, NULL, 1, 0, METRIC_KERNEL_SUM};
    TRY(measure_cold(d, &w, plan, &out->empty));
    /* The first graph replayed after CUPTI's activity tracing has run is
     * slow through all its replays, whichever shape (without CUPTI the
     * first graph is as fast as the later ones): one is replayed untimed. */
    double untimed = 0.0;
    TRY(graph_per_call(d, issue_empty, NULL, GRAPH_CALLS, 1, &untimed));
    return graph_per_call(d, issue_empty, NULL, GRAPH_CALLS, graph_replays, &out->empty_graph_per_call_us);
}

/* The floor of n_rows rows (1: the one-row kernel). */
static int measure_rows(bench_device *d, const sampling_plan *plan, int32_t n_rows, const char *name,
                        round_stats *out) {
    row_ctx r = {NULL, NULL, n_rows};
    const size_t bytes = ((size_t)n_rows * FLOOR_ROW_FLOATS + (size_t)n_rows) * sizeof(float);
    /* Where the route fixtures put their logits: the rows are read from the
     * addresses an E512 call of n_rows tokens reads. */
    r.rows = arena_take(&d->arena, bytes, name);
    if (r.rows == NULL) return -1;
    r.out = r.rows + (size_t)n_rows * FLOOR_ROW_FLOATS;
    int rc = cudaMemset(r.rows, 0x3c, bytes) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
    const workload w = {name, issue_rows, &r, 1, 0, METRIC_KERNEL_SUM};
    if (rc == 0) rc = measure_cold(d, &w, plan, out);
    arena_release_all(&d->arena);
    return rc;
}

static int measure_barrier(bench_device *d, const sampling_plan *plan, floor_figures *out) {
    int per_sm = 0;
    CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bench_floor_grid_barrier_kernel(),
                                                           FLOOR_BLOCK_THREADS, 0));
    if (per_sm < 1) {
        fprintf(stderr, BENCH_PROG ": the grid-barrier floor kernel cannot be resident on a multiprocessor\n");
        return -1;
    }
    barrier_ctx b = {d->sm_count, NULL};
    const size_t bytes = (size_t)bench_floor_barrier_words() * sizeof(uint32_t);
    CUDA_TRY(cudaMalloc((void **)&b.workspace, bytes));
    int rc = cudaMemset(b.workspace, 0, bytes) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
    const workload w = {"grid-barrier floor", issue_barrier, &b, 1, 0, METRIC_KERNEL_SUM};
    if (rc == 0) rc = measure_cold(d, &w, plan, &out->barrier);
    out->barrier_ctas = b.ctas;
    cudaFree(b.workspace);
    return rc;
}

static int measure_copy(bench_device *d, const sampling_plan *plan, floor_figures *out) {
    copy_ctx c = {NULL, NULL, (size_t)FLOOR_COPY_BYTES};
    int rc = 0;
    if (cudaMalloc(&c.src, c.bytes) != cudaSuccess || cudaMalloc(&c.dst, c.bytes) != cudaSuccess ||
        cudaMemset(c.src, 0x3c, c.bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, BENCH_PROG ": cannot set up the %zu-byte copy floor\n", c.bytes);
        rc = -1;
    }
    const workload w = {"device-to-device copy floor", issue_copy, &c, 0, COUNT_AT_LEAST_ONE,
                        METRIC_COPY_SUM};
    if (rc == 0) rc = measure_cold(d, &w, plan, &out->copy);
    out->copy_bytes = FLOOR_COPY_BYTES;
    /* A copy reads and writes every byte: its memory traffic is twice its
     * size, and that traffic over its time is the device's memory rate. */
    if (rc == 0) out->copy_bytes_per_us = 2.0 * (double)out->copy_bytes / out->copy.median_us;
    if (c.src) cudaFree(c.src);
    if (c.dst) cudaFree(c.dst);
    return rc;
}

/* Each read floor reads the first bytes of one buffer of the largest. */
static int measure_reads(bench_device *d, const sampling_plan *plan, floor_figures *out) {
    static const int32_t tokens[READ_FLOOR_COUNT] = READ_FLOOR_TOKENS;
    const int64_t largest = (int64_t)tokens[READ_FLOOR_COUNT - 1] * FLOOR_EXPERTS * (int64_t)sizeof(float);
    void *buffer = NULL;
    if (cudaMalloc(&buffer, (size_t)largest + sizeof(float)) != cudaSuccess ||
        cudaMemset(buffer, 0x3c, (size_t)largest + sizeof(float)) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, BENCH_PROG ": cannot set up the %lld-byte read floor\n", (long long)largest);
        if (buffer) cudaFree(buffer);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < READ_FLOOR_COUNT && rc == 0; ++i) {
        read_floor *r = &out->reads[i];
        r->tokens = tokens[i];
        r->bytes = (int64_t)tokens[i] * FLOOR_EXPERTS * (int64_t)sizeof(float);
        read_ctx c = {d->sm_count, buffer, r->bytes, (float *)((char *)buffer + largest)};
        const workload w = {"read floor", issue_read, &c, 1, 0, METRIC_KERNEL_SUM};
        const workload bulk = {"bulk read floor", issue_read_bulk, &c, 1, 0, METRIC_KERNEL_SUM};
        rc = measure_cold(d, &w, plan, &r->read);
        if (rc == 0) rc = measure_cold(d, &bulk, plan, &r->bulk);
    }
    cudaFree(buffer);
    return rc;
}

int measure_floors(bench_device *d, const sampling_plan *plan, int32_t graph_replays, floor_figures *out) {
    memset(out, 0, sizeof(*out));
    TRY(measure_empty(d, plan, graph_replays, out));
    TRY(measure_rows(d, plan, 1, "one-row floor", &out->one_row));
    TRY(measure_rows(d, plan, FLOOR_FEW_ROWS, "few-rows floor", &out->few_rows));
    TRY(measure_barrier(d, plan, out));
    TRY(measure_copy(d, plan, out));
    TRY(measure_reads(d, plan, out));
    return 0;
}

double bandwidth_floor_us(const floor_figures *f, int64_t bytes) {
    return f->copy_bytes_per_us > 0.0 ? (double)bytes / f->copy_bytes_per_us : 0.0;
}
