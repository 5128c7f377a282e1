// A stand-in for libcuda.so.1 that presents one plausible device and runs
// nothing: it accepts the library's kernel images, answers the attribute
// and occupancy queries (fake_driver.h says with what), and records every
// cuLaunchKernelEx, the kernel's parameter block included, for
// test_launch.cpp to compare with what the library promised. Entry points
// are resolved through cuGetProcAddress_v2, as the library resolves them.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

struct FakeKernel {
    uint32_t magic;
    char name[128];
};
constexpr uint32_t kKernelMagic = 0x6b65726eu;
constexpr int kMaxKernels = 1024;
constexpr int kMaxLaunches = 16;

FakeKernel g_kernels[kMaxKernels];
int g_kernel_count = 0;
FakeLaunch g_launches[kMaxLaunches];
int g_launch_count = 0;
int g_refuse_count = 0;
CUresult g_refuse_result = CUDA_SUCCESS;
int g_library_count = 0;
int g_cc = 90, g_sms = 132, g_occupancy = 1, g_clusters = 1, g_context_sms = 0;
int g_context_object;
CUcontext const kContext = reinterpret_cast<CUcontext>(&g_context_object);

int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

CUresult fake_GetErrorName(CUresult, const char **name) {
    *name = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

CUresult fake_Init(unsigned) {
    g_cc = env_int("FAKE_DRIVER_CC", 90);
    g_sms = env_int("FAKE_DRIVER_SMS", 132);
    g_occupancy = env_int("FAKE_DRIVER_OCCUPANCY", 1);
    g_clusters = env_int("FAKE_DRIVER_CLUSTERS", 1);
    g_context_sms = env_int("FAKE_DRIVER_CONTEXT_SMS", 0);
    return CUDA_SUCCESS;
}

CUresult fake_DeviceGetCount(int *count) {
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult fake_DeviceGet(CUdevice *device, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult fake_DeviceGetName(char *name, int length, CUdevice) {
    strncpy(name, "Fake GPU", static_cast<size_t>(length));
    return CUDA_SUCCESS;
}

CUresult fake_DeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device) {
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = g_cc / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = g_cc % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = g_sms; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = kFakeSharedPerSm; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = kFakeReservedPerCta; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = kFakeSharedPerCtaOptin; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}

CUresult fake_DevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
    *context = kContext;
    return CUDA_SUCCESS;
}

CUresult fake_DevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }

CUresult fake_CtxGetCurrent(CUcontext *context) {
    *context = kContext;
    return CUDA_SUCCESS;
}

CUresult fake_CtxPushCurrent(CUcontext context) { return context == kContext ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }

CUresult fake_CtxPopCurrent(CUcontext *context) {
    if (context) *context = kContext;
    return CUDA_SUCCESS;
}

CUresult fake_CtxGetDevice(CUdevice *device) {
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult fake_CtxGetId(CUcontext context, unsigned long long *id) {
    if (context != kContext) return CUDA_ERROR_INVALID_CONTEXT;
    *id = 1;
    return CUDA_SUCCESS;
}

// The one context holds FAKE_DRIVER_CONTEXT_SMS multiprocessors where that
// is set (a green context), else the device's.
CUresult fake_CtxGetDevResource(CUcontext context, CUdevResource *resource, CUdevResourceType type) {
    if (context != kContext || type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_VALUE;
    memset(resource, 0, sizeof *resource);
    resource->type = CU_DEV_RESOURCE_TYPE_SM;
    resource->sm.smCount = static_cast<unsigned>(g_context_sms > 0 ? g_context_sms : g_sms);
    return CUDA_SUCCESS;
}

// Any stream (a test passes made-up handles) belongs to the one context.
CUresult fake_StreamGetCtx(CUstream, CUcontext *context) {
    *context = kContext;
    return CUDA_SUCCESS;
}

CUresult fake_LibraryLoadData(CUlibrary *library, const void *code, CUjit_option *, void **, unsigned,
                              CUlibraryOption *, void **, unsigned) {
    if (code == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *library = reinterpret_cast<CUlibrary>(static_cast<uintptr_t>(++g_library_count));
    return CUDA_SUCCESS;
}

CUresult fake_LibraryGetKernel(CUkernel *kernel, CUlibrary, const char *name) {
    if (g_kernel_count == kMaxKernels || strlen(name) >= sizeof g_kernels[0].name) return CUDA_ERROR_NOT_FOUND;
    FakeKernel &k = g_kernels[g_kernel_count++];
    k.magic = kKernelMagic;
    strcpy(k.name, name);
    *kernel = reinterpret_cast<CUkernel>(&k);
    return CUDA_SUCCESS;
}

const FakeKernel *kernel_of(const void *handle) {
    for (int i = 0; i < g_kernel_count; ++i)
        if (handle == &g_kernels[i]) return &g_kernels[i];
    return nullptr;
}

CUresult fake_KernelGetAttribute(int *value, CUfunction_attribute attribute, CUkernel kernel, CUdevice) {
    if (kernel_of(kernel) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    switch (attribute) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 64; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = kFakeStaticSharedBytes; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}

// A kernel launches as a function of the same handle (the library casts).
CUresult fake_KernelGetFunction(CUfunction *function, CUkernel kernel) {
    if (kernel_of(kernel) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    *function = reinterpret_cast<CUfunction>(kernel);
    return CUDA_SUCCESS;
}

CUresult fake_KernelSetAttribute(CUfunction_attribute, int, CUkernel kernel, CUdevice) {
    return kernel_of(kernel) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult fake_OccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction function, int, size_t) {
    if (kernel_of(function) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    *blocks = g_occupancy;
    return CUDA_SUCCESS;
}

// Clusters of the portable size (8) fit; one of 16 where FAKE_DRIVER_CLUSTERS.
CUresult fake_OccupancyMaxActiveClusters(int *clusters, CUfunction function, const CUlaunchConfig *config) {
    if (kernel_of(function) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    unsigned size = 1;
    for (unsigned i = 0; i < config->numAttrs; ++i)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) size = config->attrs[i].value.clusterDim.x;
    *clusters = size <= 8 || g_clusters ? 1 : 0;
    return CUDA_SUCCESS;
}

CUresult fake_LaunchKernelEx(const CUlaunchConfig *config, CUfunction function, void **params, void **extra) {
    FakeLaunch record;
    memset(&record, 0, sizeof record);
    const FakeKernel *k = kernel_of(function);
    strcpy(record.kernel, k ? k->name : "(not a kernel handle)");
    record.grid[0] = config->gridDimX;
    record.grid[1] = config->gridDimY;
    record.grid[2] = config->gridDimZ;
    record.block[0] = config->blockDimX;
    record.block[1] = config->blockDimY;
    record.block[2] = config->blockDimZ;
    record.shared_bytes = config->sharedMemBytes;
    record.stream = config->hStream;
    record.attribute_count = config->numAttrs;
    for (unsigned i = 0; i < config->numAttrs && i < 8; ++i) record.attributes[i] = config->attrs[i];
    // The router's kernels take exactly one parameter, the RouteArgs block.
    record.parameter_count = params == nullptr ? 0 : params[0] == nullptr ? 0 : extra == nullptr ? 1 : -1;
    if (params && params[0]) memcpy(&record.args, params[0], sizeof record.args);
    record.result = CUDA_SUCCESS;
    if (g_refuse_count > 0) {
        --g_refuse_count;
        record.result = g_refuse_result;
    }
    if (g_launch_count < kMaxLaunches) g_launches[g_launch_count++] = record;
    return record.result;
}

struct Entry {
    const char *name;
    void *function;
};

#define FAKE_ENTRY(name) {"cu" #name, reinterpret_cast<void *>(fake_##name)}
const Entry kEntries[] = {
    FAKE_ENTRY(GetErrorName),        FAKE_ENTRY(Init),
    FAKE_ENTRY(DeviceGetCount),      FAKE_ENTRY(DeviceGet),
    FAKE_ENTRY(DeviceGetName),       FAKE_ENTRY(DeviceGetAttribute),
    FAKE_ENTRY(DevicePrimaryCtxRetain), FAKE_ENTRY(DevicePrimaryCtxRelease),
    FAKE_ENTRY(CtxGetCurrent),       FAKE_ENTRY(CtxPushCurrent),
    FAKE_ENTRY(CtxPopCurrent),       FAKE_ENTRY(CtxGetDevice),
    FAKE_ENTRY(CtxGetId),            FAKE_ENTRY(CtxGetDevResource),
    FAKE_ENTRY(StreamGetCtx),        FAKE_ENTRY(LibraryLoadData),
    FAKE_ENTRY(LibraryGetKernel),    FAKE_ENTRY(KernelGetAttribute),
    FAKE_ENTRY(KernelGetFunction),   FAKE_ENTRY(KernelSetAttribute),
    FAKE_ENTRY(OccupancyMaxActiveBlocksPerMultiprocessor),
    FAKE_ENTRY(OccupancyMaxActiveClusters),
    FAKE_ENTRY(LaunchKernelEx),
};

}  // namespace

FAKE_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *status) {
    *pfn = nullptr;
    for (const Entry &e : kEntries) {
        if (strcmp(symbol, e.name) == 0) {
            *pfn = e.function;
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    }
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

FAKE_API void fake_driver_reset(void) {
    g_launch_count = 0;
    g_refuse_count = 0;
}

FAKE_API void fake_driver_refuse(int count, CUresult result) {
    g_refuse_count = count;
    g_refuse_result = result;
}

FAKE_API int fake_driver_launch_count(void) { return g_launch_count; }

FAKE_API const FakeLaunch *fake_driver_launch(int index) {
    return index >= 0 && index < g_launch_count ? &g_launches[index] : nullptr;
}
