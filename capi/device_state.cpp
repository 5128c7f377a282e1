#include "device_state.h"

#include <atomic>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "images.h"
#include "route_args.h"

namespace alphamoe {
namespace {

struct Slot {
    pthread_mutex_t lock;
    std::atomic<int> resolved;  // 1 once status/state are final
    alphamoe_status status;
    DeviceState state;
};

struct Kernels {
    alphamoe_status status[ALPHAMOE_KERNEL_COUNT];
    CUkernel kernel[kEntryVariants][ALPHAMOE_KERNEL_COUNT][kRowWidths];  // DeviceState::entries
};

// Whether kernel i is the large kernel, plain (or flavoured, where
// `flavoured` is true).
bool is_large(int i, bool flavoured) {
    for (int shared = 0; shared < 2; ++shared)
        if (i == kernel_index(ALPHAMOE_SPECIALIZATION_LARGE, shared != 0, flavoured)) return true;
    return false;
}

bool is_large_kernel(int i) { return is_large(i, false) || is_large(i, true); }

// Whether kernel i has entry points for 16-bit logits: every plain kernel
// (the plain softmax over them) and the flavoured large kernel.
bool has_half_logits_entry(int i) {
    for (int shared = 0; shared < 2; ++shared)
        for (int s = ALPHAMOE_SPECIALIZATION_TINY; s <= ALPHAMOE_SPECIALIZATION_LARGE; ++s)
            if (i == kernel_index(static_cast<alphamoe_specialization>(s), shared != 0, false)) return true;
    return is_large(i, true);
}

// Whether kernel i has the variant's entry point for row width w.
bool has_entry(int variant, int i, int w) {
    switch (variant) {
    case kEntryPlain:
        return true;
    case kEntryOneToken:
        return (1 << w) >= kOneTokenEntryMinSlots && (i == kernel_index(ALPHAMOE_SPECIALIZATION_TINY, false, true) ||
                                                      i == kernel_index(ALPHAMOE_SPECIALIZATION_TINY, true, true));
    case kEntryStaged:
    case kEntryStagedHalfLogits:
        return is_large(i, false);
    case kEntryHalfLogits:
        return has_half_logits_entry(i);
    case kEntryTokenCtas:
        return (1 << w) >= kOneTokenEntryMinSlots && i == kernel_index(ALPHAMOE_SPECIALIZATION_SMALL, false, true);
    default:
        return false;
    }
}

// The variant's part of an entry point's name.
const char *const kVariantNames[kEntryVariants] = {"", "_one_token", "_staged", "_half_logits",
                                                    "_staged_half_logits", "_token_ctas"};

// Looks up <entry point><variant>_w<slots> of kernel k.
CUresult variant_entry_point(const Driver &d, CUlibrary library, const EmbeddedKernel &k, const char *variant, int w,
                             CUkernel *out) {
    char name[96];
    snprintf(name, sizeof name, "%s%s_w%d", k.entry_point, variant, 1 << w);
    return d.LibraryGetKernel(out, library, name);
}

Kernels g_kernels;
Slot *g_slots = nullptr;
int g_slot_count = 0;
alphamoe_status g_setup_status = ALPHAMOE_ERROR_OUT_OF_MEMORY;
pthread_once_t g_setup_once = PTHREAD_ONCE_INIT;

// Loads every embedded fatbin as a context-independent library. A fatbin
// without an image for some device fails only when that device looks its
// kernel up, which is where ALPHAMOE_ERROR_NO_IMAGE comes from.
void setup_once() {
    const Driver *driver = nullptr;
    g_setup_status = load_driver(&driver);
    if (g_setup_status != ALPHAMOE_OK) return;
    g_setup_status = ALPHAMOE_ERROR_OUT_OF_MEMORY;
    const Driver &d = *driver;
    for (int i = 0; i < ALPHAMOE_KERNEL_COUNT; ++i) {
        const EmbeddedKernel &k = embedded_kernel(i);
        CUlibrary library = nullptr;
        CUresult r = d.LibraryLoadData(&library, k.fatbin, nullptr, nullptr, 0, nullptr, nullptr, 0);
        for (int w = 0; w < kRowWidths; ++w)
            for (int v = 0; v < kEntryVariants && r == CUDA_SUCCESS; ++v)
                if (has_entry(v, i, w))
                    r = variant_entry_point(d, library, k, kVariantNames[v], w, &g_kernels.kernel[v][i][w]);
        g_kernels.status[i] = status_from_cuda(r);
    }
    g_slots = static_cast<Slot *>(calloc(static_cast<size_t>(d.device_count), sizeof(Slot)));
    if (g_slots == nullptr) return;
    for (int i = 0; i < d.device_count; ++i) pthread_mutex_init(&g_slots[i].lock, nullptr);
    g_slot_count = d.device_count;
    g_setup_status = ALPHAMOE_OK;
}

// The driver table is process-wide; setup_once fetches it itself.
alphamoe_status setup() {
    pthread_once(&g_setup_once, setup_once);
    return g_setup_status;
}

int attribute(const Driver &d, CUdevice dev, CUdevice_attribute a, alphamoe_status *status) {
    int v = 0;
    const CUresult r = d.DeviceGetAttribute(&v, a, dev);
    if (r != CUDA_SUCCESS && *status == ALPHAMOE_OK) *status = status_from_cuda(r);
    return v;
}

// The large kernel is a persistent grid of one CTA per SM, but most of its
// entry points (48 to 64 registers a thread, 48 KB) fit twice on an SM, so
// the block scheduler may place two on one where the SMs are partly taken
// at launch: a dependent launch starting beside its producer took 3.5 us
// more per call at E512 M4096 in graphs, and nothing more once this
// reservation was in. Reserving, unused, just over half an SM's shared
// memory per CTA rules two out. Sets the kernel's dynamic shared memory
// limit to that and returns it in *bytes (0 where the device cannot give
// one CTA that much).
CUresult one_cta_per_sm(const Driver &d, CUdevice dev, CUkernel k, int smem_per_sm, int reserved_per_cta,
                        int max_per_cta, int32_t *bytes) {
    int static_bytes = 0;
    const CUresult r = d.KernelGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k, dev);
    if (r != CUDA_SUCCESS) return r;
    const int dynamic = smem_per_sm / 2 + 1 - reserved_per_cta - static_bytes;
    *bytes = dynamic > 0 && static_bytes + dynamic <= max_per_cta ? dynamic : 0;
    if (*bytes == 0) return CUDA_SUCCESS;
    return d.KernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, *bytes, k, dev);
}

// Needs a context of `dev` current (occupancy is asked through it).
alphamoe_status resolve(const Driver &d, CUdevice dev, DeviceState *st) {
    alphamoe_status status = ALPHAMOE_OK;
    alphamoe_device_attributes &a = st->attributes;
    a.struct_size = sizeof(a);
    const int major = attribute(d, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &status);
    const int minor = attribute(d, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &status);
    a.compute_capability = major * 10 + minor;
    a.multiprocessor_count = attribute(d, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &status);
    a.cooperative_launch = attribute(d, dev, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, &status);
    const int smem_per_sm = attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &status);
    const int reserved_per_cta = attribute(d, dev, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, &status);
    const int max_per_cta = attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &status);
    if (status != ALPHAMOE_OK) return status;
    if (image_arch_for(a.compute_capability) == 0) return ALPHAMOE_ERROR_NO_IMAGE;

    int min_occupancy = 1 << 30;
    // A grid entry point's image loaded in this context, its dynamic shared
    // memory set (large), and its occupancy, which the device's cooperative
    // grids are sized from.
    const auto prepare_grid_entry = [&](CUkernel k, bool large, int32_t *dynamic_smem) {
        *dynamic_smem = 0;
        int regs = 0;  // the first look at the image: a device without one fails here
        CUresult r = d.KernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k, dev);
        if (r == CUDA_SUCCESS && large)
            r = one_cta_per_sm(d, dev, k, smem_per_sm, reserved_per_cta, max_per_cta, dynamic_smem);
        CUfunction f = nullptr;
        if (r == CUDA_SUCCESS) r = d.KernelGetFunction(&f, k);
        int occupancy = 0;
        if (r == CUDA_SUCCESS)
            r = d.OccupancyMaxActiveBlocksPerMultiprocessor(&occupancy, f, kBlockThreads,
                                                            static_cast<size_t>(*dynamic_smem));
        if (r == CUDA_SUCCESS && occupancy < min_occupancy) min_occupancy = occupancy;
        return r;
    };
    // Whether a token-CTA entry point's grid of kMaxTokenCtas CTAs, a
    // cluster beyond the portable size, fits the device once the kernel
    // allows such sizes (as the context resolving the device sees it). Any
    // refusal says only that it does not: such grids then take another
    // path (alphamoe_route), never a failing launch.
    bool token_clusters_fit = true;
    const auto allow_token_cluster = [&](CUkernel k) {
        CUresult r = d.KernelSetAttribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, k, dev);
        CUfunction f = nullptr;
        if (r == CUDA_SUCCESS) r = d.KernelGetFunction(&f, k);
        CUlaunchAttribute cluster = {};
        cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        cluster.value.clusterDim.x = kMaxTokenCtas;
        cluster.value.clusterDim.y = 1;
        cluster.value.clusterDim.z = 1;
        CUlaunchConfig cfg = {};
        cfg.gridDimX = kMaxTokenCtas;
        cfg.gridDimY = 1;
        cfg.gridDimZ = 1;
        cfg.blockDimX = kBlockThreads;
        cfg.blockDimY = 1;
        cfg.blockDimZ = 1;
        cfg.attrs = &cluster;
        cfg.numAttrs = 1;
        int clusters = 0;
        if (r == CUDA_SUCCESS) r = d.OccupancyMaxActiveClusters(&clusters, f, &cfg);
        if (r != CUDA_SUCCESS || clusters < 1) token_clusters_fit = false;
    };
    for (int i = 0; i < ALPHAMOE_KERNEL_COUNT; ++i) {
        if (g_kernels.status[i] != ALPHAMOE_OK) return g_kernels.status[i];
        for (int v = 0; v < kEntryVariants; ++v) {
            for (int w = 0; w < kRowWidths; ++w) {
                EntryPoint &e = st->entries[v][i][w];
                e.kernel = g_kernels.kernel[v][i][w];
                e.dynamic_smem = 0;
                if (e.kernel == nullptr) continue;
                // A one-token entry point launches one CTA: it needs its
                // image loaded, not an occupancy.
                CUfunction one_token = nullptr;
                const CUresult r = v == kEntryOneToken
                                       ? d.KernelGetFunction(&one_token, e.kernel)
                                       : prepare_grid_entry(e.kernel, is_large_kernel(i), &e.dynamic_smem);
                if (r != CUDA_SUCCESS) return status_from_cuda(r);
                if (v == kEntryTokenCtas) allow_token_cluster(e.kernel);
            }
        }
    }
    if (min_occupancy < 1) return ALPHAMOE_ERROR_UNSUPPORTED_DEVICE;
    a.cooperative_ctas_per_sm = min_occupancy;
    st->token_cluster_ctas = token_clusters_fit ? kMaxTokenCtas : kMaxClusterCtas;
    st->device = dev;
    return ALPHAMOE_OK;
}

// Resolves dev's slot once; with_context(body) runs body with a context of
// dev current, only when the slot still needs resolving.
template <typename WithContext>
alphamoe_status state_for(const Driver &d, CUdevice dev, WithContext with_context,
                          const DeviceState **out) {
    if (dev < 0 || dev >= g_slot_count) return ALPHAMOE_ERROR_NO_DEVICE;
    Slot &slot = g_slots[dev];
    if (!slot.resolved.load(std::memory_order_acquire)) {
        pthread_mutex_lock(&slot.lock);
        if (!slot.resolved.load(std::memory_order_relaxed)) {
            const alphamoe_status s = with_context([&] { return resolve(d, dev, &slot.state); });
            // A failing driver call (a context that cannot be made current,
            // say) says nothing lasting about the device: ask again next time.
            if (s == ALPHAMOE_ERROR_CUDA) {
                pthread_mutex_unlock(&slot.lock);
                return s;
            }
            slot.status = s;
            slot.resolved.store(1, std::memory_order_release);
        }
        pthread_mutex_unlock(&slot.lock);
    }
    if (slot.status != ALPHAMOE_OK) return slot.status;
    *out = &slot.state;
    return ALPHAMOE_OK;
}

template <typename Body>
alphamoe_status in_context(const Driver &d, CUcontext ctx, Body body) {
    if (d.CtxPushCurrent(ctx) != CUDA_SUCCESS) return ALPHAMOE_ERROR_CUDA;
    const alphamoe_status s = body();
    CUcontext popped = nullptr;
    d.CtxPopCurrent(&popped);
    return s;
}

}  // namespace

alphamoe_status device_state_for_stream(const Driver &d, CUstream stream, const DeviceState **out) {
    alphamoe_status s = setup();
    if (s != ALPHAMOE_OK) return s;
    CUcontext ctx = nullptr;
    CUresult r = d.StreamGetCtx(stream, &ctx);
    if (r != CUDA_SUCCESS || ctx == nullptr) return r == CUDA_SUCCESS ? ALPHAMOE_ERROR_CUDA : status_from_cuda(r);
    CUdevice dev = -1;
    s = in_context(d, ctx, [&] {
        return d.CtxGetDevice(&dev) == CUDA_SUCCESS ? ALPHAMOE_OK : ALPHAMOE_ERROR_CUDA;
    });
    if (s != ALPHAMOE_OK) return s;
    return state_for(d, dev, [&](auto body) { return in_context(d, ctx, body); }, out);
}

alphamoe_status device_state_for_ordinal(const Driver &d, int ordinal, const DeviceState **out) {
    alphamoe_status s = setup();
    if (s != ALPHAMOE_OK) return s;
    if (ordinal < 0 || ordinal >= d.device_count) return ALPHAMOE_ERROR_NO_DEVICE;
    CUdevice dev = -1;
    CUresult r = d.DeviceGet(&dev, ordinal);
    if (r != CUDA_SUCCESS) return status_from_cuda(r);
    return state_for(d, dev,
                     [&](auto body) {
                         CUcontext primary = nullptr;
                         if (d.DevicePrimaryCtxRetain(&primary, dev) != CUDA_SUCCESS)
                             return ALPHAMOE_ERROR_CUDA;
                         const alphamoe_status result = in_context(d, primary, body);
                         d.DevicePrimaryCtxRelease(dev);
                         return result;
                     },
                     out);
}

}  // namespace alphamoe
