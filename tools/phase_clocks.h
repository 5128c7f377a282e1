/* Profiling builds (-Dphase_clocks=true): the phases of one cold call. */
#ifndef ALPHAMOE_TOOLS_PHASE_CLOCKS_H
#define ALPHAMOE_TOOLS_PHASE_CLOCKS_H

#include <alphamoe/router.h>
#include <cuda_runtime_api.h>

/* Evicts L2, routes once, and prints how long CTA 0 spent in each phase, from
 * the clock stamps the kernels leave in the workspace header. */
int phase_clocks_report(const alphamoe_router *router, int32_t num_tokens, const float *logits,
                        const alphamoe_buffers *buffers, cudaStream_t stream);

#endif
