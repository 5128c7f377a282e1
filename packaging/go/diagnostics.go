package router

// What the library decides and holds (alphamoe/router_diagnostics.h): for
// tests, benchmarks and bug reports; nothing here is needed to route.

// #cgo pkg-config: alphamoe-router
// #include <alphamoe/router_diagnostics.h>
// #include <stdlib.h>
import "C"

import "unsafe"

// Specialization is the kernel specialization routing a call
// (alphamoe_specialization); Params.ForceSpecialization forces one, for
// tests that compare them.
type Specialization int32

const (
	SpecializationAuto  Specialization = C.ALPHAMOE_SPECIALIZATION_AUTO
	SpecializationTiny  Specialization = C.ALPHAMOE_SPECIALIZATION_TINY
	SpecializationSmall Specialization = C.ALPHAMOE_SPECIALIZATION_SMALL
	SpecializationLarge Specialization = C.ALPHAMOE_SPECIALIZATION_LARGE
)

// String is the library's name ("auto", "tiny", "small", "large"), or ""
// for another value.
func (s Specialization) String() string {
	name := C.alphamoe_specialization_name(C.alphamoe_specialization(s))
	if name == nil {
		return ""
	}
	return C.GoString(name)
}

// KernelCount is the number of kernels the library holds.
const KernelCount = C.ALPHAMOE_KERNEL_COUNT

// DeviceAttributes describe a device as the variant selection reads it
// (alphamoe_device_attributes); made by hand, they ask Select about a
// device this machine lacks.
type DeviceAttributes struct {
	ComputeCapability    int // major*10 + minor, e.g. 90
	MultiprocessorCount  int
	CooperativeCTAsPerSM int // resident router CTAs per multiprocessor, >= 1
	CooperativeLaunch    bool
}

// Selection is which specialization, grid, block and image a call would
// use (alphamoe_selection).
type Selection struct {
	Specialization Specialization
	GridCTAs       int
	BlockThreads   int
	Cooperative    bool // every CTA resident at once
	ImageArch      int  // the embedded image used: 90 for sm_90a, 100, 103
	TokensPerCTA   int
}

// QueryDeviceAttributes reads the attributes of CUDA device ordinal.
func QueryDeviceAttributes(ordinal int) (DeviceAttributes, error) {
	a := C.alphamoe_device_attributes{struct_size: C.sizeof_alphamoe_device_attributes}
	if err := check(C.alphamoe_device_attributes_query(clamp32(ordinal), &a)); err != nil {
		return DeviceAttributes{}, err
	}
	return DeviceAttributes{int(a.compute_capability), int(a.multiprocessor_count),
		int(a.cooperative_ctas_per_sm), a.cooperative_launch != 0}, nil
}

// Select says which specialization, grid, block and image a call with
// numTokens would use on a device with these attributes. A pure function:
// ErrUnsupportedFlavour says the GPU kernels do not implement the flavour.
func (r *Router) Select(numTokens int, d DeviceAttributes) (Selection, error) {
	if r.raw == nil {
		return Selection{}, statusError(StatusNullPointer)
	}
	cooperative := C.int32_t(0)
	if d.CooperativeLaunch {
		cooperative = 1
	}
	a := C.alphamoe_device_attributes{
		struct_size:             C.sizeof_alphamoe_device_attributes,
		compute_capability:      clamp32(d.ComputeCapability),
		multiprocessor_count:    clamp32(d.MultiprocessorCount),
		cooperative_ctas_per_sm: clamp32(d.CooperativeCTAsPerSM),
		cooperative_launch:      cooperative,
	}
	s := C.alphamoe_selection{struct_size: C.sizeof_alphamoe_selection}
	if err := check(C.alphamoe_router_select(r.raw, clamp32(numTokens), &a, &s)); err != nil {
		return Selection{}, err
	}
	return Selection{Specialization(s.specialization), int(s.grid_ctas), int(s.block_threads),
		s.cooperative != 0, int(s.image_arch), int(s.tokens_per_cta)}, nil
}

// DeviceInfo is a device's name, compute capability and the image arch it
// would run (0 when the library holds none for it).
type DeviceInfo struct {
	Name              string
	ComputeCapability int
	ImageArch         int
}

// DescribeDevice names CUDA device ordinal and the image it would run.
func DescribeDevice(ordinal int) (DeviceInfo, error) {
	const capacity = 256
	name := (*C.char)(C.malloc(capacity))
	defer C.free(unsafe.Pointer(name))
	var cc, arch C.int32_t
	if err := check(C.alphamoe_device_describe(clamp32(ordinal), name, capacity, &cc, &arch)); err != nil {
		return DeviceInfo{}, err
	}
	return DeviceInfo{C.GoString(name), int(cc), int(arch)}, nil
}
