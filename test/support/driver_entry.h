/* CUDA driver entry points for tests, reached through the runtime
 * (cudaGetDriverEntryPointByVersion), so that no test links libcuda and
 * every test still starts, and skips, on a machine without a driver. Also
 * small PTX kernels the fault tests launch. */
#ifndef ALPHAMOE_TEST_DRIVER_ENTRY_H
#define ALPHAMOE_TEST_DRIVER_ENTRY_H

#include <cuda.h>

/* The entry point `name` at ABI `version` (e.g. 12040), or NULL. */
void *driver_entry(const char *name, unsigned version);

/* A kernel that executes `trap`: the launch fails and the context is left
 * with a sticky error (cudaErrorLaunchFailure). */
extern const char kTrapKernelPtx[];
#define TRAP_KERNEL_NAME "alphamoe_test_trap"
/* A kernel that does nothing: probes what a launch configuration may do. */
extern const char kEmptyKernelPtx[];
#define EMPTY_KERNEL_NAME "alphamoe_test_empty"

/* Loads PTX in the current context and returns the named function; a
 * CUresult other than CUDA_SUCCESS on failure. */
CUresult load_ptx_function(const char *ptx, const char *name, CUfunction *out);

#endif
