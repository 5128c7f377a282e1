/*
 * The reference kernels of alphamoe-bench (floor_kernels.cu) and their
 * launches: an empty kernel, a cooperative kernel crossing one grid barrier,
 * and the producer kernel placed before the router in the dependent-launch
 * measurement.
 */
#ifndef ALPHAMOE_BENCH_FLOOR_KERNELS_H
#define ALPHAMOE_BENCH_FLOOR_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Threads per CTA of the floors: the router's own CTA size, so that a floor
 * launches what a router launch would. */
#define FLOOR_BLOCK_THREADS 512
/* The producer's CTA size and its compute phase: dependent FMAs per thread,
 * a few microseconds on a current GPU. */
#define PRODUCER_BLOCK_THREADS 256
#define PRODUCER_WORK 1024

/* Defined in floor_kernels.cu. */
const void *bench_floor_empty_kernel(void);
const void *bench_floor_one_row_kernel(void);
const void *bench_floor_rows_kernel(void);
const void *bench_floor_grid_barrier_kernel(void);
const void *bench_floor_read_kernel(void);
const void *bench_floor_read_bulk_kernel(void);
const void *bench_pdl_producer_kernel(void);
int32_t bench_floor_barrier_words(void);

/* One CTA of FLOOR_BLOCK_THREADS that does nothing. */
cudaError_t launch_empty_floor(cudaStream_t stream);

/* The row floor's row: E512 FP32 logits. */
#define FLOOR_ROW_FLOATS 512

/* One CTA of FLOOR_BLOCK_THREADS whose warp 0 reads `row`
 * (FLOOR_ROW_FLOATS floats) and stores their maximum to `out`. */
cudaError_t launch_one_row_floor(cudaStream_t stream, const float *row, float *out);

/* One CTA of FLOOR_BLOCK_THREADS whose warp w < n_rows (at most
 * FLOOR_BLOCK_THREADS / 32) reads row w of `rows` (consecutive rows of
 * FLOOR_ROW_FLOATS floats) and stores its maximum to out[w]. */
cudaError_t launch_rows_floor(cudaStream_t stream, const float *rows, int32_t n_rows, float *out);

/* `ctas` CTAs of FLOOR_BLOCK_THREADS through cudaLaunchCooperativeKernel,
 * one grid barrier; workspace: bench_floor_barrier_words() words, zeroed
 * once. */
cudaError_t launch_grid_barrier_floor(cudaStream_t stream, int32_t ctas, uint32_t *workspace);

/* The read floor's CTAs: READ_FLOOR_CTAS_PER_SM per multiprocessor of
 * READ_FLOOR_THREADS threads. */
#define READ_FLOOR_CTAS_PER_SM 16
#define READ_FLOOR_THREADS 256

/* Reads `bytes` (a multiple of 16) at `src` once, 16 bytes a load; `out`
 * is one float, never written for a buffer of positive floats. */
cudaError_t launch_read_floor(cudaStream_t stream, int32_t sm_count, const void *src, int64_t bytes, float *out);

/* The bulk read floor's CTAs, one per multiprocessor, and the chunks each
 * keeps in flight through the bulk copy engine (dynamic shared memory of
 * READ_BULK_STAGES x READ_BULK_CHUNK_BYTES). */
#define READ_BULK_STAGES 8
#define READ_BULK_CHUNK_BYTES (16 * 1024)

/* Reads `bytes` (a multiple of 16) at `src` (16-byte aligned) once into
 * shared memory by cp.async.bulk; `out` as for launch_read_floor. */
cudaError_t launch_read_bulk_floor(cudaStream_t stream, int32_t sm_count, const void *src, int64_t bytes, float *out);

/* Writes `count` logits from `seed` after its compute phase, triggering
 * dependent launch in between (see floor_kernels.cu). */
cudaError_t launch_producer(cudaStream_t stream, int32_t ctas, float *logits, int64_t count, uint64_t seed);

#ifdef __cplusplus
}
#endif

#endif
