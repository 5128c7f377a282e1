package router

// #cgo pkg-config: alphamoe-router
// #include <alphamoe/router.h>
// #include <stdint.h>
//
// /* The buffers struct is built here, on the C side: a Go struct holding
//    pointers to Go memory may not be passed to C. */
// static alphamoe_status route_host(const alphamoe_router *r, int32_t m, const float *logits,
//                                   int32_t *ids, float *weights, int32_t *sorted, int64_t sorted_capacity,
//                                   int32_t *blocks, int64_t blocks_capacity, int32_t *live,
//                                   int32_t *counts, int32_t *offsets, int32_t *pairs) {
//     alphamoe_buffers b = {sizeof b};
//     b.topk_ids = ids;
//     b.topk_weights = weights;
//     b.sorted_token_ids = sorted;
//     b.sorted_token_ids_capacity = sorted_capacity;
//     b.expert_ids = blocks;
//     b.expert_ids_capacity = blocks_capacity;
//     b.num_tokens_post_padded = live;
//     b.expert_counts = counts;
//     b.expert_offsets = offsets;
//     b.pair_to_sorted = pairs;
//     return alphamoe_route_host(r, m, logits, &b);
// }
//
// static alphamoe_status route_device(const alphamoe_router *r, int32_t m, uintptr_t logits,
//                                     uintptr_t ids, uintptr_t weights, uintptr_t sorted, int64_t sorted_capacity,
//                                     uintptr_t blocks, int64_t blocks_capacity, uintptr_t live,
//                                     uintptr_t counts, uintptr_t offsets, uintptr_t pairs,
//                                     uintptr_t workspace, size_t workspace_bytes, uintptr_t stream) {
//     alphamoe_buffers b = {sizeof b};
//     b.topk_ids = (int32_t *)ids;
//     b.topk_weights = (float *)weights;
//     b.sorted_token_ids = (int32_t *)sorted;
//     b.sorted_token_ids_capacity = sorted_capacity;
//     b.expert_ids = (int32_t *)blocks;
//     b.expert_ids_capacity = blocks_capacity;
//     b.num_tokens_post_padded = (int32_t *)live;
//     b.expert_counts = (int32_t *)counts;
//     b.expert_offsets = (int32_t *)offsets;
//     b.pair_to_sorted = (int32_t *)pairs;
//     b.workspace = (void *)workspace;
//     b.workspace_bytes = workspace_bytes;
//     return alphamoe_route(r, m, (const float *)logits, &b, (struct CUstream_st *)stream);
// }
import "C"

import (
	"fmt"
	"math"
	"runtime"
)

// Flags of Params.Flags.
const (
	// FlagSharedExpert: slot TopK-1 is always expert NumExperts-1.
	FlagSharedExpert uint32 = 0x1
	// FlagTailFill: fill the plan with the sentinel and -1 up to capacity.
	FlagTailFill uint32 = 0x2
	// FlagPDL: programmatic dependent launch (sm_90 and newer).
	FlagPDL uint32 = 0x4
)

// Params is what a router is created from.
type Params struct {
	NumExperts      int    // E, 1..512
	TopK            int    // k, 1..min(E, 16)
	BlockM          int    // rows per expert block, 1..256
	MaxTokens       int    // the largest token count a call will pass
	LogitsRowStride int    // elements between rows of logits; 0 means NumExperts
	Flags           uint32 // Flag* bits
}

// Sizes are the element counts of every output (bytes for the workspace)
// for a router's MaxTokens.
type Sizes struct {
	TopkIDs, TopkWeights, SortedTokenIDs, ExpertIDs int
	ExpertCounts, ExpertOffsets, PairToSorted       int
	WorkspaceBytes, WorkspaceAlignment              int
}

// Router is a validated, immutable parameter set; safe to share between
// goroutines. Close releases it.
type Router struct {
	raw    *C.alphamoe_router
	params C.alphamoe_params
	sizes  C.alphamoe_sizes
}

// clamp32 saturates, so the library rejects out-of-range counts with its
// own status.
func clamp32(n int) C.int32_t {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	if n < math.MinInt32 {
		return math.MinInt32
	}
	return C.int32_t(n)
}

// New validates p and creates a router. Host only, no GPU needed.
func New(p Params) (*Router, error) {
	raw := C.alphamoe_params{
		struct_size:       C.sizeof_alphamoe_params,
		num_experts:       clamp32(p.NumExperts),
		top_k:             clamp32(p.TopK),
		block_m:           clamp32(p.BlockM),
		max_tokens:        clamp32(p.MaxTokens),
		logits_row_stride: C.int64_t(p.LogitsRowStride),
		flags:             C.uint32_t(p.Flags),
	}
	r := &Router{}
	if err := check(C.alphamoe_router_create(&raw, &r.raw)); err != nil {
		return nil, err
	}
	runtime.SetFinalizer(r, (*Router).Close)
	r.params.struct_size = C.sizeof_alphamoe_params
	r.sizes.struct_size = C.sizeof_alphamoe_sizes
	if err := check(C.alphamoe_router_get_params(r.raw, &r.params)); err != nil {
		r.Close()
		return nil, err
	}
	if err := check(C.alphamoe_router_sizes(r.raw, &r.sizes)); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close releases the router; calls after Close fail with StatusNullPointer.
func (r *Router) Close() {
	if r.raw != nil {
		C.alphamoe_router_destroy(r.raw)
		r.raw = nil
	}
}

// Params are the router's parameters as the library normalized them.
func (r *Router) Params() Params {
	p := r.params
	return Params{int(p.num_experts), int(p.top_k), int(p.block_m), int(p.max_tokens),
		int(p.logits_row_stride), uint32(p.flags)}
}

// Sizes of every output for the router's MaxTokens.
func (r *Router) Sizes() Sizes {
	z := r.sizes
	return Sizes{int(z.topk_ids.elements), int(z.topk_weights.elements), int(z.sorted_token_ids.elements),
		int(z.expert_ids.elements), int(z.expert_counts.elements), int(z.expert_offsets.elements),
		int(z.pair_to_sorted.elements), int(z.workspace.bytes), int(z.workspace_alignment)}
}

// RouteHost routes numTokens rows of logits on the CPU (the contract's
// reference) into a new plan.
func (r *Router) RouteHost(numTokens int, logits []float32) (*Plan, error) {
	plan := r.NewPlan()
	if err := r.RouteHostInto(numTokens, logits, plan); err != nil {
		return nil, err
	}
	return plan, nil
}

// RouteHostInto is RouteHost reusing plan's buffers. On error no element
// of plan has changed.
func (r *Router) RouteHostInto(numTokens int, logits []float32, plan *Plan) error {
	if r.raw == nil {
		return statusError(StatusNullPointer)
	}
	if numTokens < 0 || numTokens > int(r.params.max_tokens) {
		return statusError(StatusNumTokens)
	}
	if err := r.checkLogits(numTokens, len(logits)); err != nil {
		return err
	}
	if !plan.fits(r) {
		return invalidArgument("the plan was made for another router")
	}
	var logitsPtr *C.float
	if len(logits) > 0 {
		logitsPtr = (*C.float)(&logits[0])
	}
	b := &plan.buf
	err := check(C.route_host(r.raw, C.int32_t(numTokens), logitsPtr,
		first(b.ids), firstFloat(b.weights), first(b.sorted), C.int64_t(len(b.sorted)),
		first(b.blocks), C.int64_t(len(b.blocks)), first(b.live[:]),
		first(b.counts), first(b.offsets), first(b.pairs)))
	runtime.KeepAlive(logits)
	if err != nil {
		return err
	}
	plan.setView(numTokens)
	return nil
}

// DeviceBuffers are device addresses (CUdeviceptr values) of one call's
// outputs and its workspace. Optional outputs are 0 to skip them.
type DeviceBuffers struct {
	TopkIDs, TopkWeights   uintptr
	SortedTokenIDs         uintptr
	SortedTokenIDsCapacity int // elements
	ExpertIDs              uintptr
	ExpertIDsCapacity      int // elements
	NumTokensPostPadded    uintptr
	ExpertCounts           uintptr
	ExpertOffsets          uintptr
	PairToSorted           uintptr
	Workspace              uintptr // zeroed once after allocation
	WorkspaceBytes         int
}

// Route launches the routing kernel on stream (0: the current context's
// default stream), asynchronously. logits and the buffers must be device
// memory of the stream's context, of the sizes Sizes gives, alive until
// the launch completes. ErrNoDriver or ErrNoDevice without a GPU.
func (r *Router) Route(numTokens int, logits uintptr, b *DeviceBuffers, stream uintptr) error {
	if r.raw == nil {
		return statusError(StatusNullPointer)
	}
	return check(C.route_device(r.raw, clamp32(numTokens), C.uintptr_t(logits),
		C.uintptr_t(b.TopkIDs), C.uintptr_t(b.TopkWeights), C.uintptr_t(b.SortedTokenIDs),
		C.int64_t(b.SortedTokenIDsCapacity), C.uintptr_t(b.ExpertIDs), C.int64_t(b.ExpertIDsCapacity),
		C.uintptr_t(b.NumTokensPostPadded), C.uintptr_t(b.ExpertCounts), C.uintptr_t(b.ExpertOffsets),
		C.uintptr_t(b.PairToSorted), C.uintptr_t(b.Workspace), C.size_t(b.WorkspaceBytes),
		C.uintptr_t(stream)))
}

func (r *Router) checkLogits(numTokens, n int) error {
	if numTokens == 0 {
		return nil
	}
	needed := (numTokens-1)*int(r.params.logits_row_stride) + int(r.params.num_experts)
	if n < needed {
		return invalidArgument(fmt.Sprintf("logits holds %d values, %d tokens need %d", n, numTokens, needed))
	}
	return nil
}

func invalidArgument(why string) error {
	return &Error{Status: StatusInvalidArgument, Message: StatusInvalidArgument.String() + ": " + why}
}

// first is the address of s[0], or NULL for an empty slice.
func first(s []int32) *C.int32_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int32_t)(&s[0])
}

// firstFloat is the address of s[0], or NULL for an empty slice.
func firstFloat(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(&s[0])
}
