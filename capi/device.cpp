#include "device.h"

#include <atomic>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

// A context the library has launched in, with its view of its device. A
// context's handle may be reused by a later context: its id, unique in the
// process, tells them apart.
struct ContextSlot {
    CUcontext context;
    unsigned long long id;
    const DeviceState *device;
    alphamoe_device_attributes attributes;
};

// Contexts are appended under the lock and never changed: a reader that
// sees the count sees every slot below it. Past the last slot a context's
// view is worked out at every call.
constexpr int kContextSlots = 64;
ContextSlot g_contexts[kContextSlots];
std::atomic<int> g_context_count{0};
pthread_mutex_t g_context_lock = PTHREAD_MUTEX_INITIALIZER;

alphamoe_status g_kernel_status[kKernelCount];
CUkernel g_kernels[kEntryCount];
Slot *g_slots = nullptr;
int g_slot_count = 0;
alphamoe_status g_setup_status = ALPHAMOE_ERROR_OUT_OF_MEMORY;
pthread_once_t g_setup_once = PTHREAD_ONCE_INIT;

// Loads every embedded fatbin as a context-independent library and looks up
// its entry points. A fatbin without an image for some device fails only
// when that device looks its kernel up, which is where
// ALPHAMOE_ERROR_NO_IMAGE comes from.
void setup_once() {
    const Driver *driver = nullptr;
    g_setup_status = load_driver(&driver);
    if (g_setup_status != ALPHAMOE_OK) return;
    g_setup_status = ALPHAMOE_ERROR_OUT_OF_MEMORY;
    const Driver &d = *driver;
    CUlibrary libraries[kKernelCount] = {};
    CUresult loaded[kKernelCount];
    for (int32_t i = 0; i < kKernelCount; ++i) {
        const KernelInfo &k = kernel_info(i);
        loaded[i] = d.LibraryLoadData(&libraries[i], k.fatbin, nullptr, nullptr, 0, nullptr, nullptr, 0);
    }
    for (int32_t e = 0; e < kEntryCount; ++e) {
        const EntryInfo &info = entry_info(e);
        CUresult &r = loaded[info.kernel];
        if (r == CUDA_SUCCESS) r = d.LibraryGetKernel(&g_kernels[e], libraries[info.kernel], info.name);
    }
    for (int32_t i = 0; i < kKernelCount; ++i) g_kernel_status[i] = status_from_cuda(loaded[i]);
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
// entry points fit twice on an SM, so the block scheduler may place two on
// one where the SMs are partly taken at launch: a dependent launch beside
// its producer (e512-m4096-k10-bm64 in a graph). Reserving, unused, just
// over half an SM's shared memory per CTA rules two out. Sets the kernel's
// dynamic shared memory limit to that and returns it in *bytes (0 where the
// device cannot give one CTA that much).
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

// The largest cluster of router CTAs the current context holds: a
// token-CTA grid's kMaxTokenCtas, beyond the portable size, where the
// device schedules one for a kernel that allows it; else the portable
// kMaxClusterCtas; else 1 (no cluster: small's grids launch cooperatively).
// Probed with one entry point. Any refusal says only that such a cluster
// does not fit.
int32_t largest_cluster(const Driver &d, CUkernel probe) {
    CUfunction f = nullptr;
    if (probe == nullptr || d.KernelGetFunction(&f, probe) != CUDA_SUCCESS) return 1;
    for (const int32_t size : {kMaxTokenCtas, kMaxClusterCtas}) {
        CUlaunchAttribute cluster = {};
        cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        cluster.value.clusterDim.x = static_cast<unsigned>(size);
        cluster.value.clusterDim.y = 1;
        cluster.value.clusterDim.z = 1;
        CUlaunchConfig cfg = {};
        cfg.gridDimX = static_cast<unsigned>(size);
        cfg.gridDimY = 1;
        cfg.gridDimZ = 1;
        cfg.blockDimX = kBlockThreads;
        cfg.blockDimY = 1;
        cfg.blockDimZ = 1;
        cfg.attrs = &cluster;
        cfg.numAttrs = 1;
        int clusters = 0;
        if (d.OccupancyMaxActiveClusters(&clusters, f, &cfg) == CUDA_SUCCESS && clusters >= 1) return size;
    }
    return 1;
}

// The largest cluster every small entry point fits in the current context:
// their resources differ, and any of them may be launched as a cluster.
int32_t largest_small_cluster(const Driver &d, const DeviceState &st) {
    int32_t size = kMaxTokenCtas;
    for (int32_t e = 0; e < kEntryCount; ++e)
        if (kernel_info(entry_info(e).kernel).specialization == ALPHAMOE_SPECIALIZATION_SMALL &&
            !kernel_info(entry_info(e).kernel).wide) {  // a wide grid is never a cluster
            const int32_t fits = largest_cluster(d, st.entries[e].kernel);
            if (fits < size) size = fits;
        }
    return size;
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
    for (int32_t i = 0; i < kKernelCount; ++i)
        if (g_kernel_status[i] != ALPHAMOE_OK) return g_kernel_status[i];

    // Each entry point's image loaded in this context (the first look at
    // it: a device without one fails here) and, but for the one-token
    // entry points, which launch one CTA, its occupancy, which the
    // device's cooperative grids are sized from; large ones reserve their
    // shared memory, small ones ask for clusters beyond the portable size.
    int min_occupancy = 1 << 30;
    for (int32_t e = 0; e < kEntryCount; ++e) {
        const EntryInfo &info = entry_info(e);
        const alphamoe_specialization spec = kernel_info(info.kernel).specialization;
        EntryPoint &entry = st->entries[e];
        entry.kernel = g_kernels[e];
        entry.dynamic_smem = 0;
        int regs = 0;
        CUresult r = d.KernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, entry.kernel, dev);
        const bool wide = kernel_info(info.kernel).wide;
        // A wide CTA's counts and rows live in dynamic shared memory
        // (kernels/wide.cu): more than half an SM's, so one CTA an SM. The
        // one-token entry points keep theirs in static shared memory.
        if (r == CUDA_SUCCESS && wide && info.variant != kVariant_one_token) {
            if (kWideSharedBytes > max_per_cta) return ALPHAMOE_ERROR_UNSUPPORTED_DEVICE;
            entry.dynamic_smem = kWideSharedBytes;
            r = d.KernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kWideSharedBytes, entry.kernel,
                                     dev);
        } else if (r == CUDA_SUCCESS && spec == ALPHAMOE_SPECIALIZATION_LARGE) {
            r = one_cta_per_sm(d, dev, entry.kernel, smem_per_sm, reserved_per_cta, max_per_cta, &entry.dynamic_smem);
        }
        // Where the device refuses, clusters stay within the portable size
        // (largest_cluster finds out).
        if (r == CUDA_SUCCESS && spec == ALPHAMOE_SPECIALIZATION_SMALL && !wide)
            d.KernelSetAttribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, entry.kernel, dev);
        CUfunction f = nullptr;
        if (r == CUDA_SUCCESS) r = d.KernelGetFunction(&f, entry.kernel);
        if (r == CUDA_SUCCESS && info.variant != kVariant_one_token) {
            int occupancy = 0;
            r = d.OccupancyMaxActiveBlocksPerMultiprocessor(&occupancy, f, kBlockThreads,
                                                            static_cast<size_t>(entry.dynamic_smem));
            if (occupancy < min_occupancy) min_occupancy = occupancy;
        }
        if (r != CUDA_SUCCESS) return status_from_cuda(r);
    }
    if (min_occupancy < 1) return ALPHAMOE_ERROR_UNSUPPORTED_DEVICE;
    a.cooperative_ctas_per_sm = min_occupancy;
    a.max_cluster_ctas = largest_small_cluster(d, *st);
    st->device = dev;
    return ALPHAMOE_OK;
}

// Resolves dev's slot once; with_context(body) runs body with a context of
// dev current, only when the slot still needs resolving.
template <typename WithContext>
alphamoe_status state_for(const Driver &d, CUdevice dev, WithContext with_context, const DeviceState **out) {
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

// The context's device, resolved if need be, and the context's view of it:
// a context of part of the device (a green context) has fewer
// multiprocessors, and perhaps no room for a cluster of the device's size.
alphamoe_status context_view(const Driver &d, CUcontext ctx, ContextSlot *out) {
    return in_context(d, ctx, [&] {
        CUdevice dev = -1;
        if (d.CtxGetDevice(&dev) != CUDA_SUCCESS) return ALPHAMOE_ERROR_CUDA;
        const DeviceState *st = nullptr;
        const alphamoe_status s = state_for(d, dev, [](auto body) { return body(); }, &st);
        if (s != ALPHAMOE_OK) return s;
        out->device = st;
        out->attributes = st->attributes;
        CUdevResource sms;
        memset(&sms, 0, sizeof sms);
        if (d.CtxGetDevResource != nullptr && d.CtxGetDevResource(ctx, &sms, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS &&
            sms.sm.smCount > 0 && static_cast<int>(sms.sm.smCount) < out->attributes.multiprocessor_count) {
            out->attributes.multiprocessor_count = static_cast<int32_t>(sms.sm.smCount);
            out->attributes.max_cluster_ctas = largest_small_cluster(d, *st);
        }
        return ALPHAMOE_OK;
    });
}

}  // namespace

alphamoe_status context_state_for_stream(const Driver &d, CUstream stream, const DeviceState **device,
                                         alphamoe_device_attributes *context_attributes) {
    alphamoe_status s = setup();
    if (s != ALPHAMOE_OK) return s;
    CUcontext ctx = nullptr;
    CUresult r = d.StreamGetCtx(stream, &ctx);
    if (r != CUDA_SUCCESS || ctx == nullptr) return r == CUDA_SUCCESS ? ALPHAMOE_ERROR_CUDA : status_from_cuda(r);
    unsigned long long id = 0;
    r = d.CtxGetId(ctx, &id);
    if (r != CUDA_SUCCESS) return status_from_cuda(r);
    const int known = g_context_count.load(std::memory_order_acquire);
    for (int i = 0; i < known; ++i) {
        const ContextSlot &c = g_contexts[i];
        if (c.context == ctx && c.id == id) {
            *device = c.device;
            *context_attributes = c.attributes;
            return ALPHAMOE_OK;
        }
    }
    ContextSlot view = {ctx, id, nullptr, {}};
    s = context_view(d, ctx, &view);
    if (s != ALPHAMOE_OK) return s;
    pthread_mutex_lock(&g_context_lock);
    const int n = g_context_count.load(std::memory_order_relaxed);
    bool listed = false;
    for (int i = known; i < n; ++i) listed |= g_contexts[i].context == ctx && g_contexts[i].id == id;
    if (!listed && n < kContextSlots) {
        g_contexts[n] = view;
        g_context_count.store(n + 1, std::memory_order_release);
    }
    pthread_mutex_unlock(&g_context_lock);
    *device = view.device;
    *context_attributes = view.attributes;
    return ALPHAMOE_OK;
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
                         if (d.DevicePrimaryCtxRetain(&primary, dev) != CUDA_SUCCESS) return ALPHAMOE_ERROR_CUDA;
                         const alphamoe_status result = in_context(d, primary, body);
                         d.DevicePrimaryCtxRelease(dev);
                         return result;
                     },
                     out);
}

alphamoe_status describe_device(const Driver &d, int ordinal, char *name, size_t name_size,
                                int32_t *compute_capability) {
    CUdevice dev = -1;
    int major = 0, minor = 0;
    CUresult r = d.DeviceGet(&dev, ordinal);
    if (r == CUDA_SUCCESS) r = d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (r == CUDA_SUCCESS) r = d.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    if (r == CUDA_SUCCESS) r = d.DeviceGetName(name, static_cast<int>(name_size) - 1, dev);
    if (r != CUDA_SUCCESS) return status_from_cuda(r);
    *compute_capability = major * 10 + minor;
    return ALPHAMOE_OK;
}

}  // namespace alphamoe
