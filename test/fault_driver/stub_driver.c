/* A stand-in for libcuda.so.1 that the fault tests point
 * ALPHAMOE_CUDA_DRIVER at. It resolves entry points through
 * cuGetProcAddress_v2 like the real driver, but can be told, through the
 * environment, to lack one of them or to fail in cuInit:
 *
 *   STUB_MISSING=name       this entry point is missing ...
 *   STUB_MISSING_HOW=how    ... as "not_found" (status SYMBOL_NOT_FOUND),
 *                           "error" (the query itself fails), "null" (found,
 *                           but a NULL pointer) or "version" (found only in
 *                           a newer driver: VERSION_NOT_SUFFICIENT)
 *   STUB_INIT_RESULT=n      cuInit returns n (default 0, success)
 *   STUB_DEVICE_COUNT=n     cuDeviceGetCount reports n devices (default 1)
 *
 * Every other entry point, if the library ever called it, ends the process
 * with exit status 42 and a message: a library that stops where it must
 * never gets there. Built with -DSTUB_WITHOUT_GET_PROC_ADDRESS it exports no
 * cuGetProcAddress_v2 at all (a driver older than CUDA 12). Plain C with the
 * driver's integer codes, no CUDA header. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STUB_API __attribute__((visibility("default")))

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_NOT_FOUND = 500,
    PROC_SUCCESS = 0,
    PROC_SYMBOL_NOT_FOUND = 1,
    PROC_VERSION_NOT_SUFFICIENT = 2,
};

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

STUB_API int cuInit(unsigned flags) {
    (void)flags;
    return env_int("STUB_INIT_RESULT", CUDA_SUCCESS);
}

STUB_API int cuDriverGetVersion(int *version) {
    *version = 13000;
    return CUDA_SUCCESS;
}

#ifndef STUB_WITHOUT_GET_PROC_ADDRESS
static int stub_device_get_count(int *count) {
    *count = env_int("STUB_DEVICE_COUNT", 1);
    return CUDA_SUCCESS;
}

static int stub_unexpected_call(void) {
    static const char msg[] = "stub driver: an entry point was called after the library should have stopped\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(43);
    _exit(42);
}

STUB_API int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status) {
    (void)version;
    (void)flags;
    const char *missing = getenv("STUB_MISSING");
    const char *how = getenv("STUB_MISSING_HOW");
    *pfn = NULL;
    if (missing && strcmp(symbol, missing) == 0) {
        if (how && strcmp(how, "error") == 0) return CUDA_ERROR_NOT_FOUND;
        if (how && strcmp(how, "null") == 0) {
            *status = PROC_SUCCESS;
            return CUDA_SUCCESS;
        }
        *status = how && strcmp(how, "version") == 0 ? PROC_VERSION_NOT_SUFFICIENT : PROC_SYMBOL_NOT_FOUND;
        return CUDA_SUCCESS;
    }
    if (strcmp(symbol, "cuInit") == 0) *pfn = (void *)cuInit;
    else if (strcmp(symbol, "cuDeviceGetCount") == 0) *pfn = (void *)stub_device_get_count;
    else *pfn = (void *)stub_unexpected_call;
    *status = PROC_SUCCESS;
    return CUDA_SUCCESS;
}
#endif
