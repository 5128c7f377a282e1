#include "floor_kernels.h"

#include "code_evict.h"

cudaError_t launch_empty_floor(cudaStream_t stream) {
    const dim3 grid = {1, 1, 1}, block = {FLOOR_BLOCK_THREADS, 1, 1};
    return cudaLaunchKernel(bench_floor_empty_kernel(), grid, block, NULL, 0, stream);
}

cudaError_t launch_one_row_floor(cudaStream_t stream, const float *row, float *out) {
    const dim3 grid = {1, 1, 1}, block = {FLOOR_BLOCK_THREADS, 1, 1};
    void *args[] = {&row, &out};
    return cudaLaunchKernel(bench_floor_one_row_kernel(), grid, block, args, 0, stream);
}

cudaError_t launch_rows_floor(cudaStream_t stream, const float *rows, int32_t n_rows, float *out) {
    const dim3 grid = {1, 1, 1}, block = {FLOOR_BLOCK_THREADS, 1, 1};
    void *args[] = {&rows, &n_rows, &out};
    return cudaLaunchKernel(bench_floor_rows_kernel(), grid, block, args, 0, stream);
}

cudaError_t launch_grid_barrier_floor(cudaStream_t stream, int32_t ctas, uint32_t *workspace) {
    const dim3 grid = {(unsigned)ctas, 1, 1}, block = {FLOOR_BLOCK_THREADS, 1, 1};
    void *args[] = {&workspace};
    return cudaLaunchCooperativeKernel(bench_floor_grid_barrier_kernel(), grid, block, args, 0, stream);
}

cudaError_t launch_read_floor(cudaStream_t stream, int32_t sm_count, const void *src, int64_t bytes, float *out) {
    const dim3 grid = {(unsigned)(sm_count * READ_FLOOR_CTAS_PER_SM), 1, 1}, block = {READ_FLOOR_THREADS, 1, 1};
    int64_t quads = bytes / 16;
    void *args[] = {&src, &quads, &out};
    return cudaLaunchKernel(bench_floor_read_kernel(), grid, block, args, 0, stream);
}

cudaError_t launch_read_bulk_floor(cudaStream_t stream, int32_t sm_count, const void *src, int64_t bytes, float *out) {
    const int smem = READ_BULK_STAGES * READ_BULK_CHUNK_BYTES;
    const cudaError_t e = cudaFuncSetAttribute(bench_floor_read_bulk_kernel(), cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    const dim3 grid = {(unsigned)sm_count, 1, 1}, block = {32, 1, 1};
    void *args[] = {&src, &bytes, &out};
    return cudaLaunchKernel(bench_floor_read_bulk_kernel(), grid, block, args, (size_t)smem, stream);
}

cudaError_t launch_producer(cudaStream_t stream, int32_t ctas, float *logits, int64_t count, uint64_t seed) {
    const dim3 grid = {(unsigned)ctas, 1, 1}, block = {PRODUCER_BLOCK_THREADS, 1, 1};
    int32_t work = PRODUCER_WORK;
    void *args[] = {&logits, &count, &seed, &work};
    return cudaLaunchKernel(bench_pdl_producer_kernel(), grid, block, args, 0, stream);
}

cudaError_t launch_code_evict(cudaStream_t stream, int32_t ctas, uint32_t *sink) {
    const dim3 grid = {(unsigned)ctas, 1, 1}, block = {CODE_EVICT_BLOCK_THREADS, 1, 1};
    uint32_t m = 0x9E3779B1u; /* odd: the kernel never writes the sink */
    void *args[] = {&m, &sink};
    return cudaLaunchKernel(bench_code_evict_kernel(), grid, block, args, 0, stream);
}
