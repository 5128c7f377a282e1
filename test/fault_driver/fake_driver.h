// What the fake driver (fake_driver.cpp) records of each cuLaunchKernelEx,
// and how a test reads it: dlopen the driver's path (the library has loaded
// it through ALPHAMOE_CUDA_DRIVER) and look these functions up.
#ifndef ALPHAMOE_TEST_FAKE_DRIVER_H
#define ALPHAMOE_TEST_FAKE_DRIVER_H

#include <cuda.h>

#include "route_args.h"

struct FakeLaunch {
    char kernel[128];           // the entry point's name, as cuLibraryGetKernel was asked for it
    unsigned grid[3], block[3];
    unsigned shared_bytes;
    CUstream stream;
    unsigned attribute_count;
    CUlaunchAttribute attributes[8];
    int parameter_count;        // kernelParams up to a NULL, at most 2 looked at; extra must be NULL
    alphamoe::RouteArgs args;   // the bytes of kernelParams[0]
    CUresult result;            // what the fake answered
};

// The device the fake presents, from the environment at cuInit:
// FAKE_DRIVER_CC (e.g. 90), FAKE_DRIVER_SMS, FAKE_DRIVER_OCCUPANCY (CTAs of
// any router kernel per multiprocessor), FAKE_DRIVER_CLUSTERS (0 where a
// cluster of 16 does not fit; one of 8 always does), FAKE_DRIVER_CONTEXT_SMS
// (the multiprocessors of the one context, a green context's, where it is
// set and fewer than the device's). Fixed: cooperative launch, 228 KiB of shared memory per
// multiprocessor, 1 KiB of it reserved per CTA, 227 KiB at most per CTA,
// kFakeStaticSharedBytes of static shared memory in every kernel.
constexpr int kFakeSharedPerSm = 233472;
constexpr int kFakeReservedPerCta = 1024;
constexpr int kFakeSharedPerCtaOptin = 232448;
constexpr int kFakeStaticSharedBytes = 46080;

extern "C" {
typedef void (*fake_driver_reset_fn)(void);
// The next `count` launches are refused with `result` (and recorded).
typedef void (*fake_driver_refuse_fn)(int count, CUresult result);
typedef int (*fake_driver_launch_count_fn)(void);
typedef const FakeLaunch *(*fake_driver_launch_fn)(int index);
}

#endif
