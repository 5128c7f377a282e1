/*
 * alphamoe-code-offset.so, an LD_PRELOAD module for before/after
 * comparisons (.ci/device-compare). With --cold-code a kernel's time
 * depends on where the driver placed its code (bench shape
 * e256-m128-k8-bm64-deepseek-v3), and the placement follows from whatever
 * the process loaded before. Before the program starts, this module loads
 * ALPHAMOE_CODE_OFFSET_BYTES of padding code into the primary context of
 * CUDA device 0, so every kernel loaded later lands that much further on;
 * a comparison that averages over several offsets measures the code, not
 * one placement.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* Padding kernels of at most this many instructions: JIT time grows
 * faster than linearly with the length of one straight body. */
#define PAD_KERNEL_INSNS 1024
#define INSN_BYTES 16
#define PAD_LIMIT_BYTES (64L << 20)

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*device_get_fn)(CUdevice *, int);
typedef CUresult (*primary_retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*ctx_push_fn)(CUcontext);
typedef CUresult (*ctx_pop_fn)(CUcontext *);
typedef CUresult (*module_load_fn)(CUmodule *, const void *, unsigned, CUjit_option *, void **);
typedef CUresult (*get_function_fn)(CUfunction *, CUmodule, const char *);

static void fail(const char *what) {
    fprintf(stderr, "alphamoe-code-offset: %s\n", what);
    exit(3);
}

/* One kernel of `insns` dependent multiply-adds (one SASS instruction
 * each at -O0) on a value known only at run time. */
static char *pad_kernel(char *p, int id, long insns) {
    p += sprintf(p,
                 ".visible .entry alphamoe_code_offset_pad%d(.param .u32 m, .param .u64 sink)\n{\n"
                 " .reg .b32 %%r<3>;\n .reg .b64 %%rd<2>;\n ld.param.u32 %%r1, [m];\n mov.u32 %%r2, %%r1;\n",
                 id);
    for (long i = 0; i < insns; ++i) p += sprintf(p, " mad.lo.u32 %%r2, %%r2, %%r1, %ld;\n", 40503 + i);
    return p + sprintf(p, " ld.param.u64 %%rd1, [sink];\n st.global.u32 [%%rd1], %%r2;\n ret;\n}\n");
}

__attribute__((constructor)) static void load_padding(void) {
    const char *env = getenv("ALPHAMOE_CODE_OFFSET_BYTES");
    char *end = NULL;
    const long bytes = env && *env ? strtol(env, &end, 10) : 0;
    if (env && *env && (*end != '\0' || bytes < 0 || bytes > PAD_LIMIT_BYTES))
        fail("ALPHAMOE_CODE_OFFSET_BYTES must be a byte count from 0 to 64 MiB");
    const long insns = bytes / INSN_BYTES;
    if (insns == 0) return;

    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (cuda == NULL) fail("cannot load libcuda.so.1");
    init_fn init = (init_fn)dlsym(cuda, "cuInit");
    device_get_fn device_get = (device_get_fn)dlsym(cuda, "cuDeviceGet");
    primary_retain_fn retain = (primary_retain_fn)dlsym(cuda, "cuDevicePrimaryCtxRetain");
    ctx_push_fn push = (ctx_push_fn)dlsym(cuda, "cuCtxPushCurrent_v2");
    ctx_pop_fn pop = (ctx_pop_fn)dlsym(cuda, "cuCtxPopCurrent_v2");
    module_load_fn load = (module_load_fn)dlsym(cuda, "cuModuleLoadDataEx");
    get_function_fn get_function = (get_function_fn)dlsym(cuda, "cuModuleGetFunction");
    if (!init || !device_get || !retain || !push || !pop || !load || !get_function)
        fail("libcuda.so.1 lacks a driver function");

    const int kernels = (int)((insns + PAD_KERNEL_INSNS - 1) / PAD_KERNEL_INSNS);
    char *ptx = malloc((size_t)insns * 48 + (size_t)kernels * 512 + 128);
    if (ptx == NULL) fail("out of host memory");
    char *p = ptx + sprintf(ptx, ".version 7.0\n.target sm_70\n.address_size 64\n");
    for (int k = 0; k < kernels; ++k) {
        const long left = insns - (long)k * PAD_KERNEL_INSNS;
        p = pad_kernel(p, k, left < PAD_KERNEL_INSNS ? left : PAD_KERNEL_INSNS);
    }

    /* The primary context stays retained and the module loaded for the
     * whole process: releasing either would free the padding. */
    CUdevice device;
    CUcontext context;
    CUmodule module;
    CUjit_option option = CU_JIT_OPTIMIZATION_LEVEL;
    void *level = (void *)(size_t)0;
    if (init(0) != CUDA_SUCCESS || device_get(&device, 0) != CUDA_SUCCESS ||
        retain(&context, device) != CUDA_SUCCESS || push(context) != CUDA_SUCCESS)
        fail("no CUDA device 0");
    if (load(&module, ptx, 1, &option, &level) != CUDA_SUCCESS) fail("cannot load the padding code");
    /* Lazy loading places a kernel's code when it is first looked up. */
    for (int k = 0; k < kernels; ++k) {
        char name[48];
        CUfunction function;
        snprintf(name, sizeof(name), "alphamoe_code_offset_pad%d", k);
        if (get_function(&function, module, name) != CUDA_SUCCESS) fail("cannot place the padding code");
    }
    pop(&context);
    free(ptx);
}
