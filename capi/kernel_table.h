// The kernels and entry points of kernels/variants.def, as the host sees
// them: names, modes, embedded fatbins, and each entry point's index.
#ifndef ALPHAMOE_CAPI_KERNEL_TABLE_H
#define ALPHAMOE_CAPI_KERNEL_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <initializer_list>

#include "alphamoe/router_diagnostics.h"

namespace alphamoe {

enum KernelId : int32_t {
#define ALPHAMOE_KERNEL(name, family, shared_expert, flavoured) kKernel_##name,
#include "variants.def"
    kKernelCount
};

enum Variant : int32_t {
#define ALPHAMOE_VARIANT(name) kVariant_##name,
#include "variants.def"
    kVariantCount
};

constexpr int32_t count_of(std::initializer_list<int> slots) { return static_cast<int32_t>(slots.size()); }

// The entry points variants.def lists.
constexpr int32_t kEntryCount = 0
#define ALPHAMOE_ENTRY(kernel, variant, ...) +count_of({__VA_ARGS__})
#include "variants.def"
    ;

// Row widths: 1, 2, 4, ..., 64 slots per lane (32 experts a slot); the
// narrow kernels' rows are up to 16 slots, the wide kernels' 16 to 64.
constexpr int kRowWidths = 7;
constexpr int kNarrowRowWidths = 5;
constexpr int kWideFirstRowWidth = 4;

// The index of the narrowest row width holding n_candidates (>= 1).
inline int row_width_index(int32_t n_candidates) {
    const int32_t slots = (n_candidates + 31) / 32;
    int w = 0;
    while ((1 << w) < slots) ++w;
    return w;
}

// A kernel's routing (variants.def's `flavoured`): the plain softmax, the
// flavours of softmax and sigmoid scoring, those of sqrt-softplus, or the
// wide kernels' (more than 512 experts or 16 chosen, every scoring).
enum Routing : int32_t {
    kRoutingPlain = 0,
    kRoutingFlavours = 1,
    kRoutingSqrtSoftplus = 2,
    kRoutingWide = 3,
    kRoutingCount
};

struct KernelInfo {
    const char *name;  // e.g. "tiny_routed"
    alphamoe_specialization specialization;
    bool shared_expert;
    bool flavoured;      // any routing flavour (not kRoutingPlain)
    bool sqrt_softplus;  // kRoutingSqrtSoftplus
    bool wide;           // kRoutingWide
    const unsigned char *fatbin;
    size_t fatbin_size;
};

struct EntryInfo {
    KernelId kernel;
    Variant variant;
    int32_t width;   // row width index: 1 << width slots
    char name[64];   // alphamoe_<kernel>[_<variant>]_w<slots>
};

const KernelInfo &kernel_info(int32_t kernel);
// The kernel of a specialization (not AUTO), expert mode and routing;
// kKernelCount for a combination with none (shared expert and sqrt-softplus).
KernelId kernel_of(alphamoe_specialization specialization, bool shared_expert, Routing routing);

const EntryInfo &entry_info(int32_t entry);
// The entry point of (kernel, variant, width), or -1 where there is none.
int32_t entry_of(KernelId kernel, Variant variant, int width);

}  // namespace alphamoe

#endif
