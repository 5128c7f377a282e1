// large: a persistent grid sized to the device. The per-CTA counts are
// scanned over CTAs by one warp per expert, spread over the whole grid,
// between two grid barriers; each CTA then reads back only its own column.
#include "common/kernel_name.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

namespace {

constexpr int kCtasPerLane = kMaxGridCtas / 32;

// counts[e][0..num_ctas) becomes its exclusive prefix; totals[e] the sum.
__device__ __forceinline__ void scan_counts_over_ctas(int32_t *row, int32_t *total_out,
                                                      int num_ctas) {
    const int lane = threadIdx.x & 31;
    int32_t v[kCtasPerLane];
    int32_t lane_sum = 0;
#pragma unroll
    for (int i = 0; i < kCtasPerLane; ++i) {
        const int c = lane * kCtasPerLane + i;
        v[i] = c < num_ctas ? __ldcg(row + c) : 0;
        lane_sum += v[i];
    }
    int32_t inclusive = lane_sum;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        const int32_t up = __shfl_up_sync(kFullMask, inclusive, offset);
        if (lane >= offset) inclusive += up;
    }
    int32_t running = inclusive - lane_sum;
#pragma unroll
    for (int i = 0; i < kCtasPerLane; ++i) {
        const int c = lane * kCtasPerLane + i;
        if (c < num_ctas) __stcg(row + c, running);
        running += v[i];
    }
    if (lane == 31) __stcg(total_out, inclusive);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kBlockThreads, 1)
    ALPHAMOE_KERNEL_NAME(large)(const RouteArgs a) {
    __shared__ CtaShared sh;
    route_kernel_body<kSharedExpert, kFlavoured>(a, sh, [&](int32_t count, int32_t *total, int32_t *earlier) {
        int32_t *counts = publish_counts_and_wait(a, count);
        int32_t *totals = counts + workspace_count_words(a.plan_experts);
        const int e = threadIdx.x;
        const int cta = blockIdx.x;
        const int num_ctas = gridDim.x;

        const int warps = num_ctas * kWarpsPerBlock;
        for (int x = cta * kWarpsPerBlock + (threadIdx.x >> 5); x < a.plan_experts; x += warps)
            scan_counts_over_ctas(counts + x * kMaxGridCtas, totals + x, num_ctas);
        grid_barrier(a.workspace, num_ctas);

        if (e >= a.plan_experts) return;
        *total = __ldcg(totals + e);
        *earlier = __ldcg(counts + e * kMaxGridCtas + cta);
    });
}
