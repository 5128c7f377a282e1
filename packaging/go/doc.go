// Package router binds libalphamoe_router.so.0: the routing of a
// Mixture-of-Experts layer (top-k expert ids, gate weights and the
// block-aligned route plan) in one GPU kernel launch, with a CPU reference
// of the same contract.
//
// The library is found with pkg-config (package libalphamoe-router-dev).
// A Router holds a validated parameter set, every routing flavour included
// (Params: scoring, logits type, groups, scaling, expert parallelism);
// RouteHost and RouteHostWith run the contract on the CPU into a Plan of
// owned buffers; Route launches the kernel on device buffers. Every failure
// is an *Error carrying the library's Status and message; compare with
// errors.Is(err, router.ErrTopK) and the like, one sentinel a status.
//
// The module lives in packaging/go of its repository, whose tags
// packaging/go/vX.Y.Z version it, so `go get
// github.com/alphamoe/alphamoe-router/packaging/go@v0.3.0` fetches it with
// no replace directive.
package router
