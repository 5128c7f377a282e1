// Package cudatest opens just enough of the CUDA driver API, at run time as
// the library opens it, for the tests to hold device buffers of a route call.
package cudatest

// #cgo LDFLAGS: -ldl
// #include <dlfcn.h>
// #include <stdint.h>
// #include <stdlib.h>
//
// typedef int (*init_fn)(unsigned);
// typedef int (*count_fn)(int *);
// typedef int (*device_get_fn)(int *, int);
// typedef int (*retain_fn)(void **, int);
// typedef int (*set_current_fn)(void *);
// typedef int (*alloc_fn)(unsigned long long *, size_t);
// typedef int (*free_fn)(unsigned long long);
// typedef int (*htod_fn)(unsigned long long, const void *, size_t);
// typedef int (*dtoh_fn)(void *, unsigned long long, size_t);
// typedef int (*memset_fn)(unsigned long long, unsigned char, size_t);
// typedef int (*sync_fn)(void);
//
// static void *lib;
// static alloc_fn mem_alloc;
// static free_fn mem_free;
// static htod_fn htod;
// static dtoh_fn dtoh;
// static memset_fn mem_set;
// static sync_fn ctx_sync;
//
// /* 0: ready; 1: no driver; 2: no device; 3: a driver with devices that
//    cannot be used. *result: the failing CUresult, or the device count. */
// static int cuda_open(const char *path, int *result, const char **what) {
//     lib = dlopen(path, RTLD_NOW);
//     if (!lib) { *what = "dlopen"; return 1; }
//     init_fn init = (init_fn)dlsym(lib, "cuInit");
//     count_fn count = (count_fn)dlsym(lib, "cuDeviceGetCount");
//     if (!init || !count) { *what = "cuInit"; return 1; }
//     *what = "cuInit";
//     if ((*result = init(0)) != 0) return 2;
//     int n = 0;
//     *what = "cuDeviceGetCount";
//     if ((*result = count(&n)) != 0 || n < 1) return 2;
//     device_get_fn device_get = (device_get_fn)dlsym(lib, "cuDeviceGet");
//     retain_fn retain = (retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
//     set_current_fn set_current = (set_current_fn)dlsym(lib, "cuCtxSetCurrent");
//     mem_alloc = (alloc_fn)dlsym(lib, "cuMemAlloc_v2");
//     mem_free = (free_fn)dlsym(lib, "cuMemFree_v2");
//     htod = (htod_fn)dlsym(lib, "cuMemcpyHtoD_v2");
//     dtoh = (dtoh_fn)dlsym(lib, "cuMemcpyDtoH_v2");
//     mem_set = (memset_fn)dlsym(lib, "cuMemsetD8_v2");
//     ctx_sync = (sync_fn)dlsym(lib, "cuCtxSynchronize");
//     *what = "dlsym";
//     if (!device_get || !retain || !set_current || !mem_alloc || !mem_free || !htod || !dtoh || !mem_set || !ctx_sync)
//         return 3;
//     int dev = 0;
//     void *ctx = NULL;
//     *what = "cuDeviceGet";
//     if ((*result = device_get(&dev, 0)) != 0) return 3;
//     *what = "cuDevicePrimaryCtxRetain";
//     if ((*result = retain(&ctx, dev)) != 0) return 3;
//     *what = "cuCtxSetCurrent";
//     if ((*result = set_current(ctx)) != 0) return 3;
//     *result = n;
//     return 0;
// }
// static int cuda_alloc(unsigned long long *p, size_t n) { return mem_alloc(p, n); }
// static int cuda_free(unsigned long long p) { return mem_free(p); }
// static int cuda_htod(unsigned long long d, const void *h, size_t n) { return htod(d, h, n); }
// static int cuda_dtoh(void *h, unsigned long long d, size_t n) { return dtoh(h, d, n); }
// static int cuda_memset(unsigned long long d, unsigned char v, size_t n) { return mem_set(d, v, n); }
// static int cuda_sync(void) { return ctx_sync(); }
import "C"

import (
	"fmt"
	"os"
	"unsafe"
)

// Availability says whether this machine can route on a GPU.
type Availability int

const (
	Ready    Availability = iota // device 0's primary context is current
	NoDriver                     // libcuda.so.1 cannot be opened: expect NO_DRIVER
	NoDevice                     // the driver sees no device: expect NO_DEVICE (or NO_DRIVER)
)

// Open opens $ALPHAMOE_CUDA_DRIVER, else libcuda.so.1, and makes device 0
// current. A driver with devices that cannot be set up is an error: that
// is a broken machine, not one without a GPU.
func Open() (Availability, string, error) {
	path := os.Getenv("ALPHAMOE_CUDA_DRIVER")
	if path == "" {
		path = "libcuda.so.1"
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var result C.int
	var what *C.char
	switch C.cuda_open(cpath, &result, &what) {
	case 0:
		return Ready, fmt.Sprintf("%d CUDA devices", int(result)), nil
	case 1:
		return NoDriver, fmt.Sprintf("%s cannot be opened (%s)", path, C.GoString(what)), nil
	case 2:
		return NoDevice, fmt.Sprintf("%s: CUresult %d, no usable device", C.GoString(what), int(result)), nil
	default:
		return Ready, "", fmt.Errorf("the CUDA driver sees devices but %s failed (CUresult %d)", C.GoString(what), int(result))
	}
}

// Array is device memory.
type Array struct {
	Address uintptr
	Bytes   int
}

func cuCheck(what string, r C.int) error {
	if r != 0 {
		return fmt.Errorf("%s failed with CUresult %d", what, int(r))
	}
	return nil
}

// Alloc returns bytes of device memory with every byte set to fill.
func Alloc(bytes int, fill byte) (Array, error) {
	n := bytes
	if n < 4 {
		n = 4
	}
	var p C.ulonglong
	if err := cuCheck("cuMemAlloc", C.cuda_alloc(&p, C.size_t(n))); err != nil {
		return Array{}, err
	}
	a := Array{Address: uintptr(p), Bytes: bytes}
	return a, cuCheck("cuMemsetD8", C.cuda_memset(p, C.uchar(fill), C.size_t(n)))
}

// UploadFloat32 copies values to new device memory.
func UploadFloat32(values []float32) (Array, error) {
	a, err := Alloc(4*len(values), 0)
	if err != nil || len(values) == 0 {
		return a, err
	}
	return a, cuCheck("cuMemcpyHtoD", C.cuda_htod(C.ulonglong(a.Address), unsafe.Pointer(&values[0]), C.size_t(4*len(values))))
}

// Int32s copies the array back as int32 values.
func (a Array) Int32s() ([]int32, error) {
	v := make([]int32, a.Bytes/4)
	if len(v) == 0 {
		return v, nil
	}
	return v, cuCheck("cuMemcpyDtoH", C.cuda_dtoh(unsafe.Pointer(&v[0]), C.ulonglong(a.Address), C.size_t(4*len(v))))
}

// Float32s copies the array back as float32 values.
func (a Array) Float32s() ([]float32, error) {
	v := make([]float32, a.Bytes/4)
	if len(v) == 0 {
		return v, nil
	}
	return v, cuCheck("cuMemcpyDtoH", C.cuda_dtoh(unsafe.Pointer(&v[0]), C.ulonglong(a.Address), C.size_t(4*len(v))))
}

// Free releases the array.
func (a Array) Free() { C.cuda_free(C.ulonglong(a.Address)) }

// Synchronize waits for the current context's work and reports its error.
func Synchronize() error { return cuCheck("cuCtxSynchronize", C.cuda_sync()) }
