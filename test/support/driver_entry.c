#include "driver_entry.h"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>
#include <stddef.h>

void *driver_entry(const char *name, unsigned version) {
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
        return NULL;
    return fn;
}

/* PTX ISA 7.0 for sm_50 is JIT-compiled by every driver that runs the
 * router. */
const char kTrapKernelPtx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry alphamoe_test_trap()\n"
    "{\n"
    "    trap;\n"
    "}\n";

const char kEmptyKernelPtx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry alphamoe_test_empty()\n"
    "{\n"
    "    ret;\n"
    "}\n";

CUresult load_ptx_function(const char *ptx, const char *name, CUfunction *out) {
    PFN_cuModuleLoadData_v2000 load = (PFN_cuModuleLoadData_v2000)driver_entry("cuModuleLoadData", 2000);
    PFN_cuModuleGetFunction_v2000 get = (PFN_cuModuleGetFunction_v2000)driver_entry("cuModuleGetFunction", 2000);
    if (!load || !get) return CUDA_ERROR_NOT_FOUND;
    CUmodule module = NULL;
    CUresult r = load(&module, ptx);
    if (r == CUDA_SUCCESS) r = get(out, module, name);
    return r;
}
