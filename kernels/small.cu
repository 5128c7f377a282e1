// small: a cooperative grid, one CTA per slice of tokens. After one grid
// barrier every CTA sums the per-CTA counts itself: redundant, but cheaper
// than a second barrier while the grid is small.
#include "common/kernel_name.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

extern "C" __global__ void __launch_bounds__(kBlockThreads, 1)
    ALPHAMOE_KERNEL_NAME(small)(const RouteArgs a) {
    __shared__ CtaShared sh;
    route_kernel_body<kSharedExpert, kFlavoured>(a, sh, [&](int32_t count, int32_t *total, int32_t *earlier) {
        const int32_t *counts = publish_counts_and_wait(a, count);
        const int e = threadIdx.x;
        const int cta = blockIdx.x;
        const int num_ctas = gridDim.x;
        if (e >= a.plan_experts) return;
        // Rows are 1 KiB aligned: 16-byte loads, independent so they overlap.
        const int4 *row = reinterpret_cast<const int4 *>(counts + e * kMaxGridCtas);
#pragma unroll 4
        for (int c4 = 0; c4 < (num_ctas + 3) / 4; ++c4) {
            const int4 v = __ldcg(row + c4);
            const int32_t values[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int c = c4 * 4 + i;
                const int32_t x = c < num_ctas ? values[i] : 0;
                *total += x;
                *earlier += c < cta ? x : 0;
            }
        }
    });
}
