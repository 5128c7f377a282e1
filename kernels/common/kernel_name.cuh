// Each family source is compiled four times: per expert mode, and for the
// first version's routing or any flavour. The entry point's name says which
// (alphamoe_<family>_routed / _shared, + _flavours, then _w<slots> for
// the row width), and the host looks it up by that name.
#ifndef ALPHAMOE_KERNELS_KERNEL_NAME_CUH
#define ALPHAMOE_KERNELS_KERNEL_NAME_CUH

#if !defined(ALPHAMOE_SHARED_EXPERT) || !defined(ALPHAMOE_FLAVOURED)
#error "compile with -DALPHAMOE_SHARED_EXPERT=0 or 1 and -DALPHAMOE_FLAVOURED=0 or 1"
#endif

#define ALPHAMOE_CONCAT_(a, b) a##b
#define ALPHAMOE_CONCAT(a, b) ALPHAMOE_CONCAT_(a, b)
#if ALPHAMOE_SHARED_EXPERT && ALPHAMOE_FLAVOURED
#define ALPHAMOE_KERNEL_NAME(family) ALPHAMOE_CONCAT(ALPHAMOE_CONCAT(alphamoe_, family), _shared_flavours)
#elif ALPHAMOE_SHARED_EXPERT
#define ALPHAMOE_KERNEL_NAME(family) ALPHAMOE_CONCAT(ALPHAMOE_CONCAT(alphamoe_, family), _shared)
#elif ALPHAMOE_FLAVOURED
#define ALPHAMOE_KERNEL_NAME(family) ALPHAMOE_CONCAT(ALPHAMOE_CONCAT(alphamoe_, family), _routed_flavours)
#else
#define ALPHAMOE_KERNEL_NAME(family) ALPHAMOE_CONCAT(ALPHAMOE_CONCAT(alphamoe_, family), _routed)
#endif

// One entry point per row width, named <kernel>_w<slots>, each running
// body<slots>(a) (see kRowWidths in route_args.h). Some calls have entry
// points of their own, so that the others' code stays as it is without
// theirs, named <kernel><variant>_w<slots>: the flavoured tiny kernel's
// one-token ones (_one_token, from kOneTokenEntryMinSlots in
// route_args.h), the routed flavoured small kernel's for grids of a token
// a CTA (_token_ctas, the same widths), the plain large kernel's staged
// ones (_staged, pairs_staged in route_args.h), those for 16-bit logits of
// every plain kernel and of the flavoured large one (_half_logits,
// flavour.cuh), and the plain large kernel's staged ones for 16-bit logits
// (_staged_half_logits).
#define ALPHAMOE_VARIANT_KERNEL(family, variant, slots, body)                                \
    extern "C" __global__ void __launch_bounds__(alphamoe::kBlockThreads, 1)                 \
        ALPHAMOE_CONCAT(ALPHAMOE_KERNEL_NAME(family), ALPHAMOE_CONCAT(variant, ALPHAMOE_CONCAT(_w, slots)))( \
            const alphamoe::RouteArgs a) {                                                   \
        body<slots>(a);                                                                      \
    }
#define ALPHAMOE_VARIANT_KERNELS(family, variant, body)                                      \
    ALPHAMOE_VARIANT_KERNEL(family, variant, 1, body)                                        \
    ALPHAMOE_VARIANT_KERNEL(family, variant, 2, body)                                        \
    ALPHAMOE_VARIANT_KERNEL(family, variant, 4, body)                                        \
    ALPHAMOE_VARIANT_KERNEL(family, variant, 8, body)                                        \
    ALPHAMOE_VARIANT_KERNEL(family, variant, 16, body)
#define ALPHAMOE_WIDTH_KERNELS(family, body) ALPHAMOE_VARIANT_KERNELS(family, , body)

namespace alphamoe {
constexpr bool kSharedExpert = ALPHAMOE_SHARED_EXPERT != 0;
constexpr bool kFlavoured = ALPHAMOE_FLAVOURED != 0;
}

#endif
