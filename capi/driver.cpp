#include "driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

namespace alphamoe {
namespace {

Driver g_driver;
alphamoe_status g_driver_status = ALPHAMOE_ERROR_NO_DRIVER;
pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;

typedef CUresult (*GetProcAddress)(const char *, void **, int, cuuint64_t,
                                   CUdriverProcAddressQueryResult *);

template <typename Fn>
bool resolve(GetProcAddress get, const char *name, int version, Fn *fn) {
    void *p = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS || p == nullptr)
        return false;
    *fn = reinterpret_cast<Fn>(p);
    return true;
}

alphamoe_status load_once() {
    const char *path = getenv("ALPHAMOE_CUDA_DRIVER");
    // Never closed: kernels and contexts may outlive any point we could pick.
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return ALPHAMOE_ERROR_NO_DRIVER;
    GetProcAddress get = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
    if (get == nullptr) return ALPHAMOE_ERROR_NO_DRIVER;  // older than CUDA 12.0

    Driver &d = g_driver;
    const bool all = resolve(get, "cuGetErrorName", 6000, &d.GetErrorName) &&
                     resolve(get, "cuInit", 2000, &d.Init) &&
                     resolve(get, "cuDeviceGetCount", 2000, &d.DeviceGetCount) &&
                     resolve(get, "cuDeviceGet", 2000, &d.DeviceGet) &&
                     resolve(get, "cuDeviceGetName", 2000, &d.DeviceGetName) &&
                     resolve(get, "cuDeviceGetAttribute", 2000, &d.DeviceGetAttribute) &&
                     resolve(get, "cuDevicePrimaryCtxRetain", 7000, &d.DevicePrimaryCtxRetain) &&
                     resolve(get, "cuDevicePrimaryCtxRelease", 11000, &d.DevicePrimaryCtxRelease) &&
                     resolve(get, "cuCtxGetCurrent", 4000, &d.CtxGetCurrent) &&
                     resolve(get, "cuCtxPushCurrent", 4000, &d.CtxPushCurrent) &&
                     resolve(get, "cuCtxPopCurrent", 4000, &d.CtxPopCurrent) &&
                     resolve(get, "cuCtxGetDevice", 2000, &d.CtxGetDevice) &&
                     resolve(get, "cuStreamGetCtx", 9020, &d.StreamGetCtx) &&
                     resolve(get, "cuCtxGetId", 12000, &d.CtxGetId) &&
                     resolve(get, "cuLibraryLoadData", 12000, &d.LibraryLoadData) &&
                     resolve(get, "cuLibraryGetKernel", 12000, &d.LibraryGetKernel) &&
                     resolve(get, "cuKernelGetAttribute", 12000, &d.KernelGetAttribute) &&
                     resolve(get, "cuKernelGetFunction", 12000, &d.KernelGetFunction) &&
                     resolve(get, "cuKernelSetAttribute", 12000, &d.KernelSetAttribute) &&
                     resolve(get, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,
                             &d.OccupancyMaxActiveBlocksPerMultiprocessor) &&
                     resolve(get, "cuOccupancyMaxActiveClusters", 11070, &d.OccupancyMaxActiveClusters) &&
                     resolve(get, "cuLaunchKernelEx", 11060, &d.LaunchKernelEx);
    if (!all) return ALPHAMOE_ERROR_NO_DRIVER;
    if (!resolve(get, "cuCtxGetDevResource", 12040, &d.CtxGetDevResource)) d.CtxGetDevResource = nullptr;

    const CUresult init = d.Init(0);
    if (init == CUDA_ERROR_NO_DEVICE) return ALPHAMOE_ERROR_NO_DEVICE;
    if (init != CUDA_SUCCESS) return status_from_cuda(init);
    if (d.DeviceGetCount(&d.device_count) != CUDA_SUCCESS || d.device_count < 1)
        return ALPHAMOE_ERROR_NO_DEVICE;
    return ALPHAMOE_OK;
}

void load_once_entry() { g_driver_status = load_once(); }

}  // namespace

alphamoe_status load_driver(const Driver **out) {
    pthread_once(&g_driver_once, load_once_entry);
    if (g_driver_status != ALPHAMOE_OK) return g_driver_status;
    *out = &g_driver;
    return ALPHAMOE_OK;
}

alphamoe_status status_from_cuda(CUresult r) {
    switch (r) {
    case CUDA_SUCCESS: return ALPHAMOE_OK;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE: return ALPHAMOE_ERROR_NO_DEVICE;
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return ALPHAMOE_ERROR_NO_IMAGE;
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_STUB_LIBRARY: return ALPHAMOE_ERROR_NO_DRIVER;
    default: return ALPHAMOE_ERROR_CUDA;
    }
}

}  // namespace alphamoe
