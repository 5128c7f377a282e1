#include "kernel_table.h"

// Defined by the generated embedded_images.S (kernels/embed_fatbins.py).
#define ALPHAMOE_KERNEL(name, family, shared_expert, flavoured) \
    extern "C" const unsigned char amoe_fatbin_##name[], amoe_fatbin_##name##_end[];
#include "variants.def"

namespace alphamoe {
namespace {

constexpr alphamoe_specialization kFamily_tiny = ALPHAMOE_SPECIALIZATION_TINY;
constexpr alphamoe_specialization kFamily_small = ALPHAMOE_SPECIALIZATION_SMALL;
constexpr alphamoe_specialization kFamily_large = ALPHAMOE_SPECIALIZATION_LARGE;

const KernelInfo kKernels[kKernelCount] = {
#define ALPHAMOE_KERNEL(name, family, shared_expert, flavoured)                                   \
    {#name, kFamily_##family, shared_expert != 0, flavoured != 0, flavoured == kRoutingSqrtSoftplus,  \
     flavoured == kRoutingWide, amoe_fatbin_##name,                                               \
     static_cast<size_t>(amoe_fatbin_##name##_end - amoe_fatbin_##name)},
#include "variants.def"
};

struct KernelModes {
    alphamoe_specialization specialization;
    bool shared_expert;
    Routing routing;
};
constexpr KernelModes kKernelModes[kKernelCount] = {
#define ALPHAMOE_KERNEL(name, family, shared_expert, flavoured) \
    {kFamily_##family, shared_expert != 0, static_cast<Routing>(flavoured)},
#include "variants.def"
};

// kernel_of's table: every specialization has a kernel of each expert mode
// and routing, but for sqrt-softplus, which takes no shared expert.
struct KernelOf {
    KernelId kernel[3][2][kRoutingCount];  // [specialization - TINY][shared_expert][routing]
};
constexpr KernelOf make_kernel_of() {
    KernelOf t = {};
    for (auto &by_shared : t.kernel)
        for (auto &by_routing : by_shared)
            for (KernelId &k : by_routing) k = kKernelCount;
    for (int32_t i = 0; i < kKernelCount; ++i) {
        const KernelModes &m = kKernelModes[i];
        t.kernel[m.specialization - ALPHAMOE_SPECIALIZATION_TINY][m.shared_expert][m.routing] =
            static_cast<KernelId>(i);
    }
    return t;
}
constexpr KernelOf kKernelOf = make_kernel_of();
constexpr bool every_kernel_listed() {
    for (int s = 0; s < 3; ++s)
        for (int x = 0; x < 2; ++x)
            for (int r = 0; r < kRoutingCount; ++r)
                if ((kKernelOf.kernel[s][x][r] == kKernelCount) != (x == 1 && r == kRoutingSqrtSoftplus))
                    return false;
    return true;
}
static_assert(every_kernel_listed(), "variants.def has a kernel for every specialization, expert mode and routing "
                                     "but a shared expert with sqrt-softplus scoring, and no other");

constexpr const char *kVariantNames[kVariantCount] = {
#define ALPHAMOE_VARIANT(name) #name,
#include "variants.def"
};

// variants.def's entry rows: a kernel, a variant and its row widths, as a
// mask of width indices.
struct EntryRow {
    KernelId kernel;
    Variant variant;
    uint32_t widths;
};

constexpr uint32_t widths_of(std::initializer_list<int> slots) {
    uint32_t mask = 0;
    for (int s : slots)
        for (int w = 0; w < kRowWidths; ++w)
            if (s == 1 << w) mask |= 1u << w;
    return mask;
}

constexpr EntryRow kEntryRows[] = {
#define ALPHAMOE_ENTRY(kernel, variant, ...) {kKernel_##kernel, kVariant_##variant, widths_of({__VA_ARGS__})},
#include "variants.def"
};

static_assert(kEntryCount > 0, "variants.def lists entry points");

constexpr const char *kKernelNames[kKernelCount] = {
#define ALPHAMOE_KERNEL(name, family, shared_expert, flavoured) #name,
#include "variants.def"
};

// Appends text to out at *at, within cap.
constexpr void append(char *out, int *at, int cap, const char *text) {
    for (; *text && *at < cap - 1; ++text) out[(*at)++] = *text;
    out[*at] = '\0';
}

struct EntryTable {
    EntryInfo entry[kEntryCount];
    int32_t index[kKernelCount][kVariantCount][kRowWidths];
};

// Every entry point, in variants.def's order, named as the kernels'
// sources name them (kernels/meson.build).
constexpr EntryTable make_entry_table() {
    EntryTable t = {};
    for (auto &by_variant : t.index)
        for (auto &by_width : by_variant)
            for (int32_t &i : by_width) i = -1;
    int32_t n = 0;
    for (const EntryRow &row : kEntryRows) {
        for (int w = 0; w < kRowWidths; ++w) {
            if (!(row.widths & (1u << w))) continue;
            EntryInfo &e = t.entry[n];
            e.kernel = row.kernel;
            e.variant = row.variant;
            e.width = w;
            int at = 0;
            const int cap = static_cast<int>(sizeof e.name);
            append(e.name, &at, cap, "alphamoe_");
            append(e.name, &at, cap, kKernelNames[row.kernel]);
            if (row.variant != kVariant_plain) {
                append(e.name, &at, cap, "_");
                append(e.name, &at, cap, kVariantNames[row.variant]);
            }
            append(e.name, &at, cap, "_w");
            const char digits[3] = {(1 << w) >= 10 ? static_cast<char>('0' + (1 << w) / 10) : '\0',
                                    static_cast<char>('0' + (1 << w) % 10), '\0'};
            append(e.name, &at, cap, digits[0] ? digits : digits + 1);
            t.index[row.kernel][row.variant][w] = n++;
        }
    }
    return t;
}

constexpr EntryTable kEntryTable = make_entry_table();

// A call's plan can always fall back on its kernel's plain entry point of
// the call's row width: every width of its routing (the narrow kernels' up
// to 16 slots, the wide kernels' from 16 on), and no other.
constexpr bool every_kernel_has_every_plain_width() {
    for (int32_t k = 0; k < kKernelCount; ++k)
        for (int w = 0; w < kRowWidths; ++w) {
            const bool wide = kKernelModes[k].routing == kRoutingWide;
            const bool listed = kEntryTable.index[k][kVariant_plain][w] >= 0;
            if (listed != (wide ? w >= kWideFirstRowWidth : w < kNarrowRowWidths)) return false;
        }
    return true;
}
static_assert(every_kernel_has_every_plain_width(),
              "variants.def lists every kernel's plain entry points at every width of its routing");

}  // namespace

const KernelInfo &kernel_info(int32_t kernel) { return kKernels[kernel]; }

KernelId kernel_of(alphamoe_specialization specialization, bool shared_expert, Routing routing) {
    return kKernelOf.kernel[specialization - ALPHAMOE_SPECIALIZATION_TINY][shared_expert][routing];
}

const EntryInfo &entry_info(int32_t entry) { return kEntryTable.entry[entry]; }

int32_t entry_of(KernelId kernel, Variant variant, int width) { return kEntryTable.index[kernel][variant][width]; }

}  // namespace alphamoe
