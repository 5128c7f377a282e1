// The CUDA driver, loaded at first use. The library has no link-time
// dependency on libcuda: without a driver every GPU entry point returns
// ALPHAMOE_ERROR_NO_DRIVER and the host-only ones keep working.
#ifndef ALPHAMOE_CAPI_DRIVER_H
#define ALPHAMOE_CAPI_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>

#include "alphamoe/router.h"

namespace alphamoe {

// Each entry point at the ABI version these signatures are written for.
struct Driver {
    PFN_cuGetErrorName_v6000 GetErrorName;
    PFN_cuInit_v2000 Init;
    PFN_cuDeviceGetCount_v2000 DeviceGetCount;
    PFN_cuDeviceGet_v2000 DeviceGet;
    PFN_cuDeviceGetName_v2000 DeviceGetName;
    PFN_cuDeviceGetAttribute_v2000 DeviceGetAttribute;
    PFN_cuDevicePrimaryCtxRetain_v7000 DevicePrimaryCtxRetain;
    PFN_cuDevicePrimaryCtxRelease_v11000 DevicePrimaryCtxRelease;
    PFN_cuCtxGetCurrent_v4000 CtxGetCurrent;
    PFN_cuCtxPushCurrent_v4000 CtxPushCurrent;
    PFN_cuCtxPopCurrent_v4000 CtxPopCurrent;
    PFN_cuCtxGetDevice_v2000 CtxGetDevice;
    PFN_cuStreamGetCtx_v9020 StreamGetCtx;
    PFN_cuCtxGetId_v12000 CtxGetId;
    // Optional (drivers of CUDA 12.4 on, which have green contexts); null
    // where the driver lacks it.
    PFN_cuCtxGetDevResource_v12040 CtxGetDevResource;
    PFN_cuLibraryLoadData_v12000 LibraryLoadData;
    PFN_cuLibraryGetKernel_v12000 LibraryGetKernel;
    PFN_cuKernelGetAttribute_v12000 KernelGetAttribute;
    PFN_cuKernelGetFunction_v12000 KernelGetFunction;
    PFN_cuKernelSetAttribute_v12000 KernelSetAttribute;
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 OccupancyMaxActiveBlocksPerMultiprocessor;
    PFN_cuOccupancyMaxActiveClusters_v11070 OccupancyMaxActiveClusters;
    PFN_cuLaunchKernelEx_v11060 LaunchKernelEx;
    int device_count;
};

// Loads libcuda.so.1 (or the file named by the environment variable
// ALPHAMOE_CUDA_DRIVER), resolves every entry point and calls cuInit, once
// per process; later calls return the first outcome.
alphamoe_status load_driver(const Driver **out);

// Maps a driver result to a status.
alphamoe_status status_from_cuda(CUresult r);

}  // namespace alphamoe

#endif
