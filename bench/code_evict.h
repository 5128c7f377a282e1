/*
 * The instruction-cache eviction of --cold-code (code_evict.cu): a kernel
 * whose straight-line code, run on every SM, leaves none of the router's
 * code in the SMs' instruction caches.
 */
#ifndef ALPHAMOE_BENCH_CODE_EVICT_H
#define ALPHAMOE_BENCH_CODE_EVICT_H

#include <stdint.h>

#include <cuda_runtime_api.h>

/* Defined in code_evict.cu. */
const void *bench_code_evict_kernel(void);
/* Bytes of code every warp of the kernel runs through. */
int64_t bench_code_evict_bytes(void);

/* Warps per CTA: one per scheduler of an SM, so every scheduler's cache
 * sees the code. */
#define CODE_EVICT_BLOCK_THREADS 128

/* `ctas` CTAs of CODE_EVICT_BLOCK_THREADS. `sink`: one int32 the kernel
 * could write but never does, so the compiler keeps all of its work. */
cudaError_t launch_code_evict(cudaStream_t stream, int32_t ctas, uint32_t *sink);

#endif
