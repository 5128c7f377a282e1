package router

// #cgo pkg-config: alphamoe-router
// #include <alphamoe/router_diagnostics.h>
// /* The package mirrors the headers of ModuleVersion: older ones lack
//    fields and statuses it passes and expects. */
// #if ALPHAMOE_VERSION_NUMBER < 300
// #error "github.com/alphamoe/alphamoe-router/packaging/go needs libalphamoe-router-dev 0.3.0 or newer"
// #endif
import "C"

// ModuleVersion is this module's version, the headers' version it mirrors.
// The repository tags it packaging/go/v0.3.0.
const ModuleVersion = "0.3.0"

// Version is the library's version, e.g. "0.3.0".
func Version() string { return C.GoString(C.alphamoe_version_string()) }

// VersionNumber is the library's version as major*10000 + minor*100 + patch.
func VersionNumber() uint32 { return uint32(C.alphamoe_version_number()) }

// KernelCount is the number of kernels the library holds (one fatbin each).
func KernelCount() int { return int(C.alphamoe_kernel_count()) }

// KernelNames are the kernels the library holds, e.g. "tiny_routed", in the
// order of Selection.KernelIndex.
func KernelNames() []string {
	return names(KernelCount(), func(i C.int32_t) *C.char { return C.alphamoe_kernel_name(i) })
}

// EntryPointNames are the entry points the library holds (the functions in
// the kernels' images, e.g. "alphamoe_large_routed_staged_w16"), in the
// order of Selection.EntryPointIndex.
func EntryPointNames() []string {
	count := int(C.alphamoe_entry_point_count())
	return names(count, func(i C.int32_t) *C.char { return C.alphamoe_entry_point_name(i) })
}

// names are nameOf(0..count-1), up to the first NULL.
func names(count int, nameOf func(C.int32_t) *C.char) []string {
	var out []string
	for i := 0; i < count; i++ {
		name := nameOf(C.int32_t(i))
		if name == nil {
			break
		}
		out = append(out, C.GoString(name))
	}
	return out
}

// KernelImages are the architectures (90, 100, 103) embedded for kernel index.
func KernelImages(index int) ([]int32, error) {
	var count C.int32_t
	if err := check(C.alphamoe_kernel_images(C.int32_t(index), nil, 0, &count)); err != nil {
		return nil, err
	}
	archs := make([]int32, int(count)+1)
	if err := check(C.alphamoe_kernel_images(C.int32_t(index), (*C.int32_t)(&archs[0]), count, &count)); err != nil {
		return nil, err
	}
	return archs[:count], nil
}

// DeviceCount is the number of CUDA devices the driver sees; ErrNoDriver or
// ErrNoDevice when there is none.
func DeviceCount() (int, error) {
	var count C.int32_t
	if err := check(C.alphamoe_device_count(&count)); err != nil {
		return 0, err
	}
	return int(count), nil
}
