// tiny: one CTA routes every token; no grid barrier, no workspace traffic.
#include "common/entry_point.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

namespace {

// One CTA: no count exchange, and the plans of few tokens (route_kernel_body).
struct TinyGrid {
    static constexpr bool kOneCta = true;
    static constexpr bool kFlavouredTokenBits = false;
    static constexpr bool kFewBlocksScan = false;
};

template <class Variant, int kSlots>
__device__ __forceinline__ void tiny(const RouteArgs &a) {
    __shared__ CtaShared sh;
    route_kernel_body<EntryPolicy<TinyGrid, Variant, kSlots>>(
        a, sh, [](int32_t count, int32_t *total, int32_t *earlier, auto /*stage: nothing to wait for*/) {
            *total = count;
            *earlier = 0;
        });
}

}  // namespace
