// tiny: one CTA routes every token; no grid barrier, no workspace traffic.
#include "common/kernel_name.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

namespace {

template <int kSlots, bool kOneTokenEntry = false, bool kHalfLogits = false>
__device__ __forceinline__ void tiny(const RouteArgs &a) {
    __shared__ CtaShared sh;
    route_kernel_body<kSlots, kSharedExpert, kFlavoured, true, kOneTokenEntry, false, false, kHalfLogits>(
        a, sh, [](int32_t count, int32_t *total, int32_t *earlier, auto /*stage: nothing to wait for*/) {
            *total = count;
            *earlier = 0;
        });
}

template <int kSlots>
__device__ __forceinline__ void tiny_one_token(const RouteArgs &a) {
    tiny<kSlots, true>(a);
}

template <int kSlots>
__device__ __forceinline__ void tiny_half_logits(const RouteArgs &a) {
    tiny<kSlots, false, true>(a);
}

}  // namespace

ALPHAMOE_WIDTH_KERNELS(tiny, tiny)
#if ALPHAMOE_FLAVOURED
static_assert(kOneTokenEntryMinSlots == 8, "the one-token entry points below");
ALPHAMOE_VARIANT_KERNEL(tiny, _one_token, 8, tiny_one_token)
ALPHAMOE_VARIANT_KERNEL(tiny, _one_token, 16, tiny_one_token)
#else
ALPHAMOE_VARIANT_KERNELS(tiny, _half_logits, tiny_half_logits)
#endif
