// tiny: one CTA routes every token; no grid barrier, no workspace traffic.
#include "common/kernel_name.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

namespace {

template <int kSlots>
__device__ __forceinline__ void tiny(const RouteArgs &a) {
    __shared__ CtaShared sh;
    route_kernel_body<kSlots, kSharedExpert, kFlavoured, true>(a, sh, [](int32_t count, int32_t *total,
                                                                         int32_t *earlier) {
        *total = count;
        *earlier = 0;
    });
}

}  // namespace

ALPHAMOE_WIDTH_KERNELS(tiny, tiny)
