// large: a persistent grid sized to the device, one exchange of counts at
// which no CTA waits for more than the counts it reads: the group sums of
// common/group_sums_exchange.cuh.
#include "common/entry_point.cuh"
#include "common/group_sums_exchange.cuh"
#include "common/route_kernel.cuh"

using namespace alphamoe;

namespace {

// A persistent grid, its CTAs grouped for the exchange of counts.
struct LargeGrid {
    static constexpr bool kOneCta = false;
    static constexpr bool kFlavouredTokenBits = false;
    static constexpr bool kFewBlocksScan = false;
};

template <class Variant, int kSlots>
__device__ __forceinline__ void large(const RouteArgs &a) {
    constexpr bool kStaged = Variant::kStagedPairs;
    __shared__ CtaShared sh;
    uint32_t phase = 0;
    const auto read_phase = [&] { phase = read_exchange_phase(a); };
    route_kernel_body<EntryPolicy<LargeGrid, Variant, kSlots>>(
        a, sh,
        [&](int32_t count, int32_t *total, int32_t *earlier, auto stage) {
            exchange_by_group_sums<kStaged>(a, phase, count, total, earlier, stage);
        },
        read_phase);
}

}  // namespace
