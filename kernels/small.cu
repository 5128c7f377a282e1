// small: a cooperative grid, one CTA per slice of tokens. After one grid
// barrier every CTA sums the per-CTA counts itself: redundant, but cheaper
// than a second barrier while the grid is small.
#include "common/dependent_launch.cuh"
#include "common/grid_barrier.cuh"
#include "common/kernel_name.cuh"
#include "common/route_cta.cuh"

using namespace alphamoe;

extern "C" __global__ void __launch_bounds__(kBlockThreads, 1)
    ALPHAMOE_KERNEL_NAME(small)(const RouteArgs a) {
    __shared__ CtaShared sh;
    wait_for_preceding_kernel();
    if (route_empty_call(a)) {
        allow_dependent_launch();
        return;
    }
    const int cta = blockIdx.x;
    const int num_ctas = gridDim.x;
    const TokenRange range = cta_token_range(a, cta);
    select_tokens_any_width<kSharedExpert>(a, sh, warp_token_range(range, threadIdx.x >> 5));
    const int32_t count = cta_expert_count(a, sh);

    const int e = threadIdx.x;
    int32_t *counts = reinterpret_cast<int32_t *>(a.workspace + kWsHeaderWords);
    if (e < a.num_experts) __stcg(counts + e * kMaxGridCtas + cta, count);
    grid_barrier(a.workspace, num_ctas);

    int32_t total = 0, earlier = 0;
    if (e < a.num_experts) {
        // Rows are 1 KiB aligned: 16-byte loads, independent so they overlap.
        const int4 *row = reinterpret_cast<const int4 *>(counts + e * kMaxGridCtas);
#pragma unroll 4
        for (int c4 = 0; c4 < (num_ctas + 3) / 4; ++c4) {
            const int4 v = __ldcg(row + c4);
            const int32_t lane_values[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int c = c4 * 4 + i;
                const int32_t x = c < num_ctas ? lane_values[i] : 0;
                total += x;
                earlier += c < cta ? x : 0;
            }
        }
    }
    place_pairs(a, sh, range, total, earlier);
    write_plan_rest(a, sh, cta, num_ctas);
    allow_dependent_launch();
}
