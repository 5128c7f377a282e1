// Programmatic dependent launch hooks. Both are no-ops when the kernel was
// not launched with programmatic stream serialization.
#ifndef ALPHAMOE_KERNELS_DEPENDENT_LAUNCH_CUH
#define ALPHAMOE_KERNELS_DEPENDENT_LAUNCH_CUH

namespace alphamoe {

// Waits until the preceding kernel on the stream has completed and its
// writes are visible. Called before the first global access: the preceding
// kernel may still read the buffers this call overwrites.
__device__ __forceinline__ void wait_for_preceding_kernel() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

// Lets the next kernel on the stream start its launch; it still waits for
// this grid's completion before reading what it wrote.
__device__ __forceinline__ void allow_dependent_launch() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace alphamoe

#endif
