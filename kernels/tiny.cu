// tiny: one CTA routes every token; no grid barrier, no workspace traffic.
#include "common/kernel_name.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

extern "C" __global__ void __launch_bounds__(kBlockThreads, 1)
    ALPHAMOE_KERNEL_NAME(tiny)(const RouteArgs a) {
    __shared__ CtaShared sh;
    route_kernel_body<kSharedExpert, kFlavoured, true>(a, sh, [](int32_t count, int32_t *total, int32_t *earlier) {
        *total = count;
        *earlier = 0;
    });
}
