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

// DeviceAttributes describe a device as the variant selection reads it
// (alphamoe_device_attributes); made by hand, they ask Select and
// Candidates about a device this machine lacks.
type DeviceAttributes struct {
	ComputeCapability    int // major*10 + minor, e.g. 90
	MultiprocessorCount  int
	CooperativeCTAsPerSM int // resident router CTAs per multiprocessor, >= 1
	CooperativeLaunch    bool
	// MaxClusterCTAs is the most router CTAs one thread-block cluster
	// holds: 16 where the device schedules clusters beyond the portable
	// size, 8, or 1 (none); 0 reads as 8, the portable size.
	MaxClusterCTAs int
}

// Selection is how a call runs: the specialization, grid, block, image and
// entry point of its one launch (alphamoe_selection).
type Selection struct {
	Specialization  Specialization
	GridCTAs        int
	BlockThreads    int
	Cooperative     bool // every CTA resident at once (a cluster or a cooperative launch)
	ImageArch       int  // the embedded image used: 90 for sm_90a, 100, 103
	TokensPerCTA    int
	ClusterCTAs     int // > 0: the grid launches as one thread-block cluster of this many CTAs
	KernelIndex     int // the kernel: KernelNames()[KernelIndex]
	EntryPointIndex int // the function launched: EntryPointNames()[EntryPointIndex]
}

func cBool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

func (d DeviceAttributes) raw() C.alphamoe_device_attributes {
	return C.alphamoe_device_attributes{
		struct_size:             C.sizeof_alphamoe_device_attributes,
		compute_capability:      clamp32(d.ComputeCapability),
		multiprocessor_count:    clamp32(d.MultiprocessorCount),
		cooperative_ctas_per_sm: clamp32(d.CooperativeCTAsPerSM),
		cooperative_launch:      cBool(d.CooperativeLaunch),
		max_cluster_ctas:        clamp32(d.MaxClusterCTAs),
	}
}

func (s Selection) raw() C.alphamoe_selection {
	return C.alphamoe_selection{
		struct_size:       C.sizeof_alphamoe_selection,
		specialization:    C.alphamoe_specialization(s.Specialization),
		grid_ctas:         clamp32(s.GridCTAs),
		block_threads:     clamp32(s.BlockThreads),
		cooperative:       cBool(s.Cooperative),
		image_arch:        clamp32(s.ImageArch),
		tokens_per_cta:    clamp32(s.TokensPerCTA),
		cluster_ctas:      clamp32(s.ClusterCTAs),
		kernel_index:      clamp32(s.KernelIndex),
		entry_point_index: clamp32(s.EntryPointIndex),
	}
}

func selectionOf(s *C.alphamoe_selection) Selection {
	return Selection{Specialization(s.specialization), int(s.grid_ctas), int(s.block_threads),
		s.cooperative != 0, int(s.image_arch), int(s.tokens_per_cta), int(s.cluster_ctas),
		int(s.kernel_index), int(s.entry_point_index)}
}

// QueryDeviceAttributes reads the attributes of CUDA device ordinal.
func QueryDeviceAttributes(ordinal int) (DeviceAttributes, error) {
	a := C.alphamoe_device_attributes{struct_size: C.sizeof_alphamoe_device_attributes}
	if err := check(C.alphamoe_device_attributes_query(clamp32(ordinal), &a)); err != nil {
		return DeviceAttributes{}, err
	}
	return DeviceAttributes{int(a.compute_capability), int(a.multiprocessor_count),
		int(a.cooperative_ctas_per_sm), a.cooperative_launch != 0, int(a.max_cluster_ctas)}, nil
}

// Select says how a call with numTokens would run on a device (a context)
// with these attributes: exactly what Route launches there. A pure
// function: ErrUnsupportedFlavour says the GPU kernels do not implement the
// router's flavour.
func (r *Router) Select(numTokens int, d DeviceAttributes) (Selection, error) {
	if err := r.live(); err != nil {
		return Selection{}, err
	}
	a := d.raw()
	s := C.alphamoe_selection{struct_size: C.sizeof_alphamoe_selection}
	if err := check(C.alphamoe_router_select(r.raw, clamp32(numTokens), &a, &s)); err != nil {
		return Selection{}, err
	}
	return selectionOf(&s), nil
}

// Candidates are every plan that computes the same results as Select's on
// the same grid, that one first, then the other entry points that can run
// the call: for benchmarks and tests that compare entry points. A pure
// function, like Select.
func (r *Router) Candidates(numTokens int, d DeviceAttributes) ([]Selection, error) {
	if err := r.live(); err != nil {
		return nil, err
	}
	a := d.raw()
	var count C.int32_t
	if err := check(C.alphamoe_router_candidates(r.raw, clamp32(numTokens), &a, nil, 0, &count)); err != nil {
		return nil, err
	}
	plans := make([]C.alphamoe_selection, int(count)+1)
	for i := range plans {
		plans[i].struct_size = C.sizeof_alphamoe_selection
	}
	if err := check(C.alphamoe_router_candidates(r.raw, clamp32(numTokens), &a, &plans[0], count, &count)); err != nil {
		return nil, err
	}
	out := make([]Selection, 0, int(count))
	for i := 0; i < int(count) && i < len(plans)-1; i++ {
		out = append(out, selectionOf(&plans[i]))
	}
	return out, nil
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
