// Package router binds libalphamoe_router.so.0: the routing of a
// Mixture-of-Experts layer (top-k expert ids, gate weights and the
// block-aligned route plan) in one GPU kernel launch, with a CPU reference
// of the same contract.
//
// The library is found with pkg-config (package libalphamoe-router-dev).
// A Router holds a validated parameter set; RouteHost runs the contract on
// the CPU into a Plan of owned buffers; Route launches the kernel on device
// buffers. Every failure is an *Error carrying the library's Status and
// message; compare with errors.Is(err, router.ErrNoDriver) and the like.
package router
