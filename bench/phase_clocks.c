#include "phase_clocks.h"

#include <stdio.h>

/* Mirrors kWsPhaseClockWord and kPhaseClockCount in kernels/route_args.h. */
enum { PHASE_CLOCK_WORD = 8, PHASE_CLOCK_COUNT = 7 };

static const char *const kPhaseNames[PHASE_CLOCK_COUNT - 1] = {
    "wait for the preceding kernel", "select tokens (warp 0)", "CTA expert counts",
    "count exchange (cluster or grid barriers)", "place pairs", "rest of the plan"};

int phase_clocks_report(const alphamoe_router *router, int32_t num_tokens, const float *logits,
                        const alphamoe_buffers *buffers, cudaStream_t stream) {
    int device = 0, l2_bytes = 0, clock_khz = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
    void *flush = NULL;
    const size_t flush_bytes = 2 * (size_t)l2_bytes;
    if (cudaMalloc(&flush, flush_bytes) != cudaSuccess) return -1;
    long long stamps[PHASE_CLOCK_COUNT] = {0};
    int rc = -1;
    if (cudaMemsetAsync(flush, 1, flush_bytes, stream) == cudaSuccess &&
        alphamoe_route(router, num_tokens, logits, buffers, stream) == ALPHAMOE_OK &&
        cudaStreamSynchronize(stream) == cudaSuccess &&
        cudaMemcpy(stamps, (const char *)buffers->workspace + PHASE_CLOCK_WORD * 4, sizeof(stamps),
                   cudaMemcpyDeviceToHost) == cudaSuccess) {
        printf("phases of CTA 0 in one call after L2 eviction (SM clock, %.0f MHz nominal):\n",
               clock_khz / 1000.0);
        for (int i = 1; i < PHASE_CLOCK_COUNT; ++i) {
            const long long cycles = stamps[i] - stamps[i - 1];
            printf("  %-32s %8lld cycles %7.2f us\n", kPhaseNames[i - 1], cycles,
                   clock_khz > 0 ? cycles * 1000.0 / clock_khz : 0.0);
        }
        rc = 0;
    }
    cudaFree(flush);
    return rc;
}
