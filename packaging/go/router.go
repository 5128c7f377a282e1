package router

// #cgo pkg-config: alphamoe-router
// #include <alphamoe/router_diagnostics.h>
// #include <stdint.h>
//
// /* The buffers struct is built here, on the C side: a Go struct holding
//    pointers to Go memory may not be passed to C. */
// static alphamoe_status route_host(const alphamoe_router *r, int32_t m, const void *logits,
//                                   int32_t *ids, float *weights, int32_t *sorted, int64_t sorted_capacity,
//                                   int32_t *blocks, int64_t blocks_capacity, int32_t *live,
//                                   int32_t *counts, int32_t *offsets, int32_t *pairs,
//                                   const float *bias, const int32_t *map, const int32_t *tokens,
//                                   const int32_t *table, const int32_t *l2p, const int32_t *replicas,
//                                   int32_t *load) {
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
//     b.correction_bias = bias;
//     b.expert_map = map;
//     b.token_ids = tokens;
//     b.hash_table = table;
//     b.logical_to_physical = l2p;
//     b.replica_count = replicas;
//     b.physical_load = load;
//     return alphamoe_route_host(r, m, logits, &b);
// }
//
// static alphamoe_status route_device(const alphamoe_router *r, int32_t m, uintptr_t logits,
//                                     uintptr_t ids, uintptr_t weights, uintptr_t sorted, int64_t sorted_capacity,
//                                     uintptr_t blocks, int64_t blocks_capacity, uintptr_t live,
//                                     uintptr_t counts, uintptr_t offsets, uintptr_t pairs,
//                                     uintptr_t workspace, size_t workspace_bytes,
//                                     uintptr_t bias, uintptr_t map, uintptr_t tokens, uintptr_t table,
//                                     uintptr_t l2p, uintptr_t replicas, uintptr_t load,
//                                     uintptr_t stream, const alphamoe_selection *plan) {
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
//     b.correction_bias = (const float *)bias;
//     b.expert_map = (const int32_t *)map;
//     b.token_ids = (const int32_t *)tokens;
//     b.hash_table = (const int32_t *)table;
//     b.logical_to_physical = (const int32_t *)l2p;
//     b.replica_count = (const int32_t *)replicas;
//     b.physical_load = (int32_t *)load;
//     if (plan != NULL)
//         return alphamoe_route_with_plan(r, m, (const void *)logits, &b, plan, (struct CUstream_st *)stream);
//     return alphamoe_route(r, m, (const void *)logits, &b, (struct CUstream_st *)stream);
// }
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// Flags of Params.Flags.
const (
	// FlagSharedExpert: slot TopK-1 is always expert NumExperts-1.
	FlagSharedExpert uint32 = C.ALPHAMOE_FLAG_SHARED_EXPERT
	// FlagTailFill: fill the plan with the sentinel and -1 up to capacity.
	FlagTailFill uint32 = C.ALPHAMOE_FLAG_TAIL_FILL
	// FlagPDL: programmatic dependent launch (sm_90 and newer).
	FlagPDL uint32 = C.ALPHAMOE_FLAG_PDL
	// FlagNoRenormalize: weights are not renormalized over the chosen experts.
	FlagNoRenormalize uint32 = C.ALPHAMOE_FLAG_NO_RENORMALIZE
	// FlagCorrectionBias: sigmoid or sqrt-softplus scoring; Inputs.CorrectionBias steers
	// the choice of experts and groups, never the weights.
	FlagCorrectionBias uint32 = C.ALPHAMOE_FLAG_CORRECTION_BIAS
	// FlagExpertMap: expert parallelism by map; Inputs.ExpertMap gives each
	// expert its local id, or -1 when another rank owns it.
	FlagExpertMap uint32 = C.ALPHAMOE_FLAG_EXPERT_MAP
	// FlagHashRouting: each token's experts are its row of Inputs.HashTable
	// (Inputs.TokenIDs picks the row), the weights the scoring's there.
	FlagHashRouting uint32 = C.ALPHAMOE_FLAG_HASH_ROUTING
	// FlagRedundantExperts: each chosen logical expert becomes one of its
	// physical replicas (Inputs.LogicalToPhysical, Inputs.ReplicaCount).
	FlagRedundantExperts uint32 = C.ALPHAMOE_FLAG_REDUNDANT_EXPERTS
	// FlagAll: every flag above.
	FlagAll uint32 = C.ALPHAMOE_FLAG_ALL
)

// Limits of Params.
const (
	MaxExperts = C.ALPHAMOE_MAX_EXPERTS
	MaxTopK    = C.ALPHAMOE_MAX_TOP_K
	MaxBlockM  = C.ALPHAMOE_MAX_BLOCK_M
)

// Scoring says how logits become scores (alphamoe_scoring).
type Scoring int32

const (
	ScoringSoftmax Scoring = C.ALPHAMOE_SCORING_SOFTMAX
	ScoringSigmoid Scoring = C.ALPHAMOE_SCORING_SIGMOID
	// ScoringSqrtSoftplus: score = sqrt(softplus(logit)) (DeepSeek-V4).
	ScoringSqrtSoftplus Scoring = C.ALPHAMOE_SCORING_SQRT_SOFTPLUS
)

// LogitsType is the element type of the logits (alphamoe_logits_type).
type LogitsType int32

const (
	LogitsF32  LogitsType = C.ALPHAMOE_LOGITS_F32
	LogitsBF16 LogitsType = C.ALPHAMOE_LOGITS_BF16
	LogitsF16  LogitsType = C.ALPHAMOE_LOGITS_F16
)

// Params is what a router is created from (alphamoe_params). Zero in a
// flavour field means the first version's behaviour: the renormalized
// fp32 softmax top-k (README, "What a call computes").
type Params struct {
	NumExperts          int            // E, 1..2048
	TopK                int            // k, 1..min(E, 32)
	BlockM              int            // rows per expert block, 1..256
	MaxTokens           int            // the largest token count a call will pass
	LogitsRowStride     int            // elements between rows of logits; 0 means NumExperts
	Flags               uint32         // Flag* bits
	ForceSpecialization Specialization // diagnostics only; SpecializationAuto lets the library choose
	Scoring             Scoring
	LogitsType          LogitsType
	NumGroups           int     // expert groups (0 or 1: none); must divide NumExperts
	TopkGroups          int     // groups kept per token, 1..NumGroups; 0 means all
	RoutedScalingFactor float32 // multiplies every weight; finite, > 0; 0 means 1
	LocalExpertBegin    int     // expert parallelism by range: global id of local expert 0
	LocalExpertCount    int     // local experts L, the plan's expert count; 0 means all
	VocabSize           int     // rows of Inputs.HashTable with FlagHashRouting (>= 1); 0 without it
	NumPhysicalExperts  int     // physical experts P with FlagRedundantExperts (1..2048); 0 without it
	ReplicaSlots        int     // replicas per logical expert at most, R in 1..P, with the flag; 0 without it
}

// Sizes are the element counts of every output (bytes for the workspace)
// for a router's MaxTokens.
type Sizes struct {
	TopkIDs, TopkWeights, SortedTokenIDs, ExpertIDs, NumTokensPostPadded int
	ExpertCounts, ExpertOffsets, PairToSorted                            int // ExpertCounts is L
	WorkspaceBytes, WorkspaceAlignment                                   int
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

func (p *Params) raw() C.alphamoe_params {
	return C.alphamoe_params{
		struct_size:           C.sizeof_alphamoe_params,
		num_experts:           clamp32(p.NumExperts),
		top_k:                 clamp32(p.TopK),
		block_m:               clamp32(p.BlockM),
		max_tokens:            clamp32(p.MaxTokens),
		logits_row_stride:     C.int64_t(p.LogitsRowStride),
		flags:                 C.uint32_t(p.Flags),
		force_specialization:  C.int32_t(p.ForceSpecialization),
		scoring:               C.int32_t(p.Scoring),
		logits_type:           C.int32_t(p.LogitsType),
		num_groups:            clamp32(p.NumGroups),
		topk_groups:           clamp32(p.TopkGroups),
		routed_scaling_factor: C.float(p.RoutedScalingFactor),
		local_expert_begin:    clamp32(p.LocalExpertBegin),
		local_expert_count:    clamp32(p.LocalExpertCount),
		vocab_size:            clamp32(p.VocabSize),
		num_physical_experts:  clamp32(p.NumPhysicalExperts),
		replica_slots:         clamp32(p.ReplicaSlots),
	}
}

// New validates p and creates a router. Host only, no GPU needed.
func New(p Params) (*Router, error) {
	raw := p.raw()
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

// Close releases the router; calls after Close fail with ErrInvalidHandle,
// as the library answers for a destroyed router.
func (r *Router) Close() {
	if r.raw != nil {
		C.alphamoe_router_destroy(r.raw)
		r.raw = nil
	}
}

// Params are the router's parameters as the library normalized them: the
// row stride resolved, NumGroups at least 1, TopkGroups resolved, the
// scaling factor 1 for 0, LocalExpertCount NumExperts for 0.
func (r *Router) Params() Params {
	p := r.params
	return Params{
		NumExperts:          int(p.num_experts),
		TopK:                int(p.top_k),
		BlockM:              int(p.block_m),
		MaxTokens:           int(p.max_tokens),
		LogitsRowStride:     int(p.logits_row_stride),
		Flags:               uint32(p.flags),
		ForceSpecialization: Specialization(p.force_specialization),
		Scoring:             Scoring(p.scoring),
		LogitsType:          LogitsType(p.logits_type),
		NumGroups:           int(p.num_groups),
		TopkGroups:          int(p.topk_groups),
		RoutedScalingFactor: float32(p.routed_scaling_factor),
		LocalExpertBegin:    int(p.local_expert_begin),
		LocalExpertCount:    int(p.local_expert_count),
		VocabSize:           int(p.vocab_size),
		NumPhysicalExperts:  int(p.num_physical_experts),
		ReplicaSlots:        int(p.replica_slots),
	}
}

// Sizes of every output for the router's MaxTokens.
func (r *Router) Sizes() Sizes {
	z := r.sizes
	return Sizes{
		TopkIDs:             int(z.topk_ids.elements),
		TopkWeights:         int(z.topk_weights.elements),
		SortedTokenIDs:      int(z.sorted_token_ids.elements),
		ExpertIDs:           int(z.expert_ids.elements),
		NumTokensPostPadded: int(z.num_tokens_post_padded.elements),
		ExpertCounts:        int(z.expert_counts.elements),
		ExpertOffsets:       int(z.expert_offsets.elements),
		PairToSorted:        int(z.pair_to_sorted.elements),
		WorkspaceBytes:      int(z.workspace.bytes),
		WorkspaceAlignment:  int(z.workspace_alignment),
	}
}

// Logits are one call's logits in host memory, of the router's LogitsType:
// LogitsOfF32, LogitsOfBF16 or LogitsOfF16 (bf16 and fp16 as their bits).
type Logits struct {
	kind LogitsType
	f32  []float32
	half []uint16
}

func LogitsOfF32(v []float32) Logits    { return Logits{kind: LogitsF32, f32: v} }
func LogitsOfBF16(bits []uint16) Logits { return Logits{kind: LogitsBF16, half: bits} }
func LogitsOfF16(bits []uint16) Logits  { return Logits{kind: LogitsF16, half: bits} }

func (l Logits) len() int { return len(l.f32) + len(l.half) }

func (l Logits) pointer() unsafe.Pointer {
	switch {
	case len(l.f32) > 0:
		return unsafe.Pointer(&l.f32[0])
	case len(l.half) > 0:
		return unsafe.Pointer(&l.half[0])
	}
	return nil
}

// Inputs are a call's inputs besides the logits, [NumExperts] each when
// given but hash routing's.
type Inputs struct {
	CorrectionBias []float32 // needed with FlagCorrectionBias
	ExpertMap      []int32   // needed with FlagExpertMap: each expert's local id, or -1
	TokenIDs       []int32   // needed with FlagHashRouting: [numTokens], each token's row of HashTable
	HashTable      []int32   // needed with FlagHashRouting: [VocabSize][TopK] expert ids
	// Needed with FlagRedundantExperts: [NumExperts][ReplicaSlots] physical ids, and
	// [NumExperts] replica counts.
	LogicalToPhysical []int32
	ReplicaCount      []int32
	// Optional with FlagRedundantExperts: [NumPhysicalExperts] counters each
	// mapped pair adds 1 to.
	PhysicalLoad []int32
}

// RouteHost routes numTokens rows of fp32 logits on the CPU (the
// contract's reference) into a new plan.
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
	return r.RouteHostWith(numTokens, LogitsOfF32(logits), Inputs{}, plan)
}

// RouteHostWith is the CPU reference for every flavour: logits of the
// router's type, the correction bias and the expert map. logits holds
// exactly numTokens rows (the last may end at NumExperts). On error no
// element of plan has changed.
func (r *Router) RouteHostWith(numTokens int, logits Logits, in Inputs, plan *Plan) error {
	if err := r.live(); err != nil {
		return err
	}
	if numTokens < 0 || numTokens > int(r.params.max_tokens) {
		return statusError(StatusNumTokens)
	}
	if want := LogitsType(r.params.logits_type); logits.kind != want {
		return detailError(StatusLogitsType, fmt.Sprintf("the logits are type %d, the router takes type %d", logits.kind, want))
	}
	if err := r.checkShapes(numTokens, logits.len(), in); err != nil {
		return err
	}
	if !plan.fits(r) {
		return detailError(StatusInvalidArgument, "the plan was made for another router")
	}
	b := &plan.buf
	err := check(C.route_host(r.raw, C.int32_t(numTokens), logits.pointer(),
		first(b.ids), firstFloat(b.weights), first(b.sorted), C.int64_t(len(b.sorted)),
		first(b.blocks), C.int64_t(len(b.blocks)), first(b.live[:]),
		first(b.counts), first(b.offsets), first(b.pairs),
		firstFloat(in.CorrectionBias), first(in.ExpertMap), first(in.TokenIDs), first(in.HashTable),
		first(in.LogicalToPhysical), first(in.ReplicaCount), first(in.PhysicalLoad)))
	runtime.KeepAlive(logits)
	runtime.KeepAlive(in)
	if err != nil {
		return err
	}
	plan.setView(numTokens)
	return nil
}

// DeviceBuffers are device addresses (CUdeviceptr values) of one call's
// outputs, its inputs besides the logits and its workspace. Optional ones
// are 0 to skip them.
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
	CorrectionBias         uintptr // fp32 [NumExperts], needed with FlagCorrectionBias
	ExpertMap              uintptr // int32 [NumExperts], needed with FlagExpertMap
	TokenIDs               uintptr // int32 [numTokens], needed with FlagHashRouting
	HashTable              uintptr // int32 [VocabSize][TopK], needed with FlagHashRouting
	LogicalToPhysical      uintptr // int32 [NumExperts][ReplicaSlots], needed with FlagRedundantExperts
	ReplicaCount           uintptr // int32 [NumExperts], needed with FlagRedundantExperts
	PhysicalLoad           uintptr // int32 [NumPhysicalExperts], optional with FlagRedundantExperts
}

// Route launches the routing kernel on stream (0: the current context's
// default stream), asynchronously. logits (of the router's LogitsType) and
// the buffers must be device memory of the stream's context, of the sizes
// Sizes gives, alive until the launch completes. ErrNoDriver or ErrNoDevice
// without a GPU.
func (r *Router) Route(numTokens int, logits uintptr, b *DeviceBuffers, stream uintptr) error {
	return r.routeDevice(numTokens, logits, b, stream, nil)
}

// RouteWithPlan is Route with one of the plans Candidates gives for the
// stream's context (its attributes as the library reads them);
// ErrInvalidArgument for any other plan. For benchmarks and tests that
// compare entry points.
func (r *Router) RouteWithPlan(numTokens int, logits uintptr, b *DeviceBuffers, plan Selection, stream uintptr) error {
	raw := plan.raw()
	return r.routeDevice(numTokens, logits, b, stream, &raw)
}

func (r *Router) routeDevice(numTokens int, logits uintptr, b *DeviceBuffers, stream uintptr, plan *C.alphamoe_selection) error {
	if err := r.live(); err != nil {
		return err
	}
	return check(C.route_device(r.raw, clamp32(numTokens), C.uintptr_t(logits),
		C.uintptr_t(b.TopkIDs), C.uintptr_t(b.TopkWeights), C.uintptr_t(b.SortedTokenIDs),
		C.int64_t(b.SortedTokenIDsCapacity), C.uintptr_t(b.ExpertIDs), C.int64_t(b.ExpertIDsCapacity),
		C.uintptr_t(b.NumTokensPostPadded), C.uintptr_t(b.ExpertCounts), C.uintptr_t(b.ExpertOffsets),
		C.uintptr_t(b.PairToSorted), C.uintptr_t(b.Workspace), C.size_t(b.WorkspaceBytes),
		C.uintptr_t(b.CorrectionBias), C.uintptr_t(b.ExpertMap), C.uintptr_t(b.TokenIDs), C.uintptr_t(b.HashTable),
		C.uintptr_t(b.LogicalToPhysical), C.uintptr_t(b.ReplicaCount), C.uintptr_t(b.PhysicalLoad),
		C.uintptr_t(stream), plan))
}

// live: ErrNullPointer for a nil router, ErrInvalidHandle for one that New
// did not make or Close released, as the library answers for such handles.
func (r *Router) live() error {
	if r == nil {
		return statusError(StatusNullPointer)
	}
	if r.raw == nil {
		return statusError(StatusInvalidHandle)
	}
	return nil
}

// checkShapes: exactly numTokens rows of logits (another length is another
// shape, refused rather than read as one) and [NumExperts] inputs.
func (r *Router) checkShapes(numTokens, n int, in Inputs) error {
	stride, e := int(r.params.logits_row_stride), int(r.params.num_experts)
	// The expert map and the load are over the experts topk_ids name.
	routed := e
	if uint32(r.params.flags)&FlagRedundantExperts != 0 {
		routed = int(r.params.num_physical_experts)
	}
	ok := n == 0
	if numTokens > 0 {
		ok = n == (numTokens-1)*stride+e || n == numTokens*stride
	}
	if !ok {
		return detailError(StatusInvalidArgument, fmt.Sprintf(
			"logits hold %d values, %d tokens of %d experts (row stride %d) need %d or %d",
			n, numTokens, e, stride, (numTokens-1)*stride+e, numTokens*stride))
	}
	for _, input := range []struct {
		name string
		n    int
		want int
	}{{"CorrectionBias", len(in.CorrectionBias), e}, {"ExpertMap", len(in.ExpertMap), routed},
		{"LogicalToPhysical", len(in.LogicalToPhysical), e * int(r.params.replica_slots)},
		{"ReplicaCount", len(in.ReplicaCount), e}, {"PhysicalLoad", len(in.PhysicalLoad), routed}} {
		if input.n != 0 && input.n != input.want {
			return detailError(StatusInvalidArgument,
				fmt.Sprintf("%s holds %d values, the router needs %d", input.name, input.n, input.want))
		}
	}
	if n := len(in.TokenIDs); n != 0 && n != numTokens {
		return detailError(StatusInvalidArgument, fmt.Sprintf("TokenIDs holds %d values for %d tokens", n, numTokens))
	}
	if n, want := len(in.HashTable), int(r.params.vocab_size)*int(r.params.top_k); n != 0 && n != want {
		return detailError(StatusInvalidArgument,
			fmt.Sprintf("HashTable holds %d values, the router's table has %d", n, want))
	}
	return nil
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
