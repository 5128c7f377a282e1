// Each family source is compiled twice, once per expert mode; the entry
// point's name says which (alphamoe_<family>_routed / _shared), and the host
// looks it up by that name.
#ifndef ALPHAMOE_KERNELS_KERNEL_NAME_CUH
#define ALPHAMOE_KERNELS_KERNEL_NAME_CUH

#ifndef ALPHAMOE_SHARED_EXPERT
#error "compile with -DALPHAMOE_SHARED_EXPERT=0 or 1"
#endif

#define ALPHAMOE_CONCAT_(a, b) a##b
#define ALPHAMOE_CONCAT(a, b) ALPHAMOE_CONCAT_(a, b)
#if ALPHAMOE_SHARED_EXPERT
#define ALPHAMOE_KERNEL_NAME(family) ALPHAMOE_CONCAT(ALPHAMOE_CONCAT(alphamoe_, family), _shared)
#else
#define ALPHAMOE_KERNEL_NAME(family) ALPHAMOE_CONCAT(ALPHAMOE_CONCAT(alphamoe_, family), _routed)
#endif

namespace alphamoe {
constexpr bool kSharedExpert = ALPHAMOE_SHARED_EXPERT != 0;
}

#endif
