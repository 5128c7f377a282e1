// tiny: one CTA routes every token; no grid barrier, no workspace traffic.
#include "common/dependent_launch.cuh"
#include "common/kernel_name.cuh"
#include "common/route_cta.cuh"

using namespace alphamoe;

extern "C" __global__ void __launch_bounds__(kBlockThreads, 1)
    ALPHAMOE_KERNEL_NAME(tiny)(const RouteArgs a) {
    __shared__ CtaShared sh;
    wait_for_preceding_kernel();
    if (route_empty_call(a)) {
        allow_dependent_launch();
        return;
    }
    const TokenRange range = {0, a.num_tokens};
    select_tokens_any_width<kSharedExpert>(a, sh, warp_token_range(range, threadIdx.x >> 5));
    const int32_t count = cta_expert_count(a, sh);
    place_pairs(a, sh, range, count, 0);
    write_plan_rest(a, sh, 0, 1);
    allow_dependent_launch();
}
