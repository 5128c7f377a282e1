// What a kernel's generated source (kernels/kernel.cu.in) defines before
// its family's code, and the macro its entry points are written with.
#ifndef ALPHAMOE_KERNELS_ENTRY_POINT_CUH
#define ALPHAMOE_KERNELS_ENTRY_POINT_CUH

#include "entry_variants.h"
#include "route_args.h"

#if !defined(ALPHAMOE_SHARED_EXPERT) || !defined(ALPHAMOE_FLAVOURED)
#error "a kernel's source defines ALPHAMOE_SHARED_EXPERT and ALPHAMOE_FLAVOURED (kernels/kernel.cu.in)"
#endif

namespace alphamoe {
constexpr bool kSharedExpert = ALPHAMOE_SHARED_EXPERT != 0;
constexpr bool kFlavoured = ALPHAMOE_FLAVOURED != 0;
// The sqrt-softplus kernels (routing 2 in variants.def) score every expert
// by sqrt-softplus; the other kernels never do.
constexpr bool kSqrtSoftplusScores = ALPHAMOE_FLAVOURED == 2;

// What route_kernel_body compiles for one entry point: the family's grid
// (Family: how its CTAs plan), the variant's policy, the row width and the
// kernel's modes, each a name.
template <class Family, class Variant, int Slots>
struct EntryPolicy : Family, Variant {
    static constexpr int kSlots = Slots;
    static constexpr bool kShared = kSharedExpert;
    static constexpr bool kFlavoured = alphamoe::kFlavoured;
};
}  // namespace alphamoe

// One entry point: the family's body for the variant and row width. Bounds
// of one CTA an SM: the large kernel with registers for two CTAs an SM was
// slower (e512-m4096-k10-bm64, e512-m16384-k10-bm8).
#define ALPHAMOE_ENTRY_POINT(name, family, variant_name, slots)                                              \
    extern "C" __global__ void __launch_bounds__(alphamoe::kBlockThreads, 1) name(const alphamoe::RouteArgs a) { \
        family<alphamoe::variant::variant_name, slots>(a);                                                    \
    }

#endif
