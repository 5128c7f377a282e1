package router_test

// The installed library through this package: the CPU reference against
// the contract computed here, bad input, the kernels and entry points it
// names, a router that is not live, and GPU routes (its own plan and every
// candidate) that match the reference or report that there is no driver or
// device.

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	router "github.com/alphamoe/alphamoe-router/packaging/go"
	"github.com/alphamoe/alphamoe-router/packaging/go/internal/cudatest"
)

const poison int32 = 0x5A5A5A5A

var poisonWeight = math.Float32frombits(uint32(poison))

func hostOutputs(p *router.Plan) outputs {
	v := poison
	return outputs{p.TopkIDs, p.TopkWeights, p.SortedTokenIDsBuffer(), p.ExpertIDsBuffer(),
		int32(p.NumTokensPostPadded), p.ExpertCounts, p.ExpertOffsets, p.PairToSorted, &v}
}

func TestHostReferenceFollowsTheContract(t *testing.T) {
	r := &rng{seed(t)}
	cases := []struct {
		params router.Params
		m      int
	}{
		{router.Params{NumExperts: 8, TopK: 2, BlockM: 4, MaxTokens: 5}, 5},
		{router.Params{NumExperts: 64, TopK: 6, BlockM: 16, MaxTokens: 40}, 33},
		{router.Params{NumExperts: 512, TopK: 10, BlockM: 8, MaxTokens: 20}, 17},
		{router.Params{NumExperts: 16, TopK: 16, BlockM: 1, MaxTokens: 9}, 9},
		{router.Params{NumExperts: 128, TopK: 8, BlockM: 64, MaxTokens: 100, Flags: router.FlagSharedExpert}, 100},
		{router.Params{NumExperts: 7, TopK: 3, BlockM: 256, MaxTokens: 3, Flags: router.FlagSharedExpert}, 2},
	}
	for _, c := range cases {
		p := c.params
		rt, err := router.New(p)
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		defer rt.Close()
		z := rt.Sizes()
		capacity := expectedCapacity(p)
		if z.SortedTokenIDs != capacity || z.ExpertIDs != capacity/p.BlockM || z.TopkIDs != p.MaxTokens*p.TopK ||
			z.PairToSorted != p.MaxTokens*p.TopK || z.ExpertCounts != p.NumExperts || z.ExpertOffsets != p.NumExperts+1 {
			t.Fatalf("%+v: sizes %+v, capacity formula gives %d", p, z, capacity)
		}
		logits := randomLogits(r, c.m, p.NumExperts)
		plan := rt.NewPlan()
		plan.Fill(poison, poisonWeight)
		if err := rt.RouteHostInto(c.m, logits, plan); err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		if err := checkContract(p, c.m, logits, hostOutputs(plan)); err != nil {
			t.Fatalf("%+v, M = %d: %v", p, c.m, err)
		}
		again, err := rt.RouteHost(c.m, logits)
		if err != nil || len(again.SortedTokenIDs) != plan.NumTokensPostPadded {
			t.Fatalf("%+v: a new plan differs: %v", p, err)
		}
	}
}

func TestZeroTokensGiveAnEmptyPlan(t *testing.T) {
	rt, err := router.New(router.Params{NumExperts: 32, TopK: 4, BlockM: 8, MaxTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	plan := rt.NewPlan()
	plan.Fill(poison, 0)
	if err := rt.RouteHostInto(0, nil, plan); err != nil {
		t.Fatal(err)
	}
	if plan.NumTokensPostPadded != 0 || len(plan.TopkIDs) != 0 || len(plan.SortedTokenIDs) != 0 {
		t.Fatalf("M = 0 gave %+v", plan)
	}
	for i, x := range plan.SortedTokenIDsBuffer() {
		if x != poison {
			t.Fatalf("M = 0 wrote sorted_token_ids[%d]", i)
		}
	}
}

func TestBadInputIsAnErrorWithTheStatusMessage(t *testing.T) {
	_, err := router.New(router.Params{NumExperts: 64, TopK: 0, BlockM: 16, MaxTokens: 8})
	var e *router.Error
	if !errors.As(err, &e) || e.Status != router.StatusTopK || !strings.HasPrefix(err.Error(), "ALPHAMOE_ERROR_TOP_K") {
		t.Fatalf("top_k 0 gave %v", err)
	}
	for _, c := range []struct {
		p    router.Params
		want router.Status
	}{
		{router.Params{NumExperts: 2049, TopK: 4, BlockM: 16, MaxTokens: 8}, router.StatusNumExperts},
		{router.Params{NumExperts: 64, TopK: 4, BlockM: 0, MaxTokens: 8}, router.StatusBlockM},
		{router.Params{NumExperts: 64, TopK: 1, BlockM: 16, MaxTokens: 8, Flags: router.FlagSharedExpert}, router.StatusSharedExpert},
		{router.Params{NumExperts: 1 << 40, TopK: 4, BlockM: 16, MaxTokens: 8}, router.StatusNumExperts},
	} {
		if _, err := router.New(c.p); !errors.As(err, &e) || e.Status != c.want {
			t.Errorf("%+v gave %v, want %v", c.p, err, c.want)
		}
	}

	rt, err := router.New(router.Params{NumExperts: 64, TopK: 4, BlockM: 16, MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	logits := make([]float32, 9*64)
	plan := rt.NewPlan()
	plan.Fill(poison, 0)
	if err := rt.RouteHostInto(9, logits, plan); !errors.As(err, &e) || e.Status != router.StatusNumTokens {
		t.Errorf("9 tokens over max_tokens 8 gave %v", err)
	}
	if err := rt.RouteHostInto(2, logits[:100], plan); !errors.Is(err, router.ErrInvalidArgument) {
		t.Errorf("short logits gave %v", err)
	}
	for i, x := range plan.SortedTokenIDsBuffer() {
		if x != poison {
			t.Fatalf("a rejected call wrote sorted_token_ids[%d]", i)
		}
	}
	small, _ := router.New(router.Params{NumExperts: 64, TopK: 2, BlockM: 16, MaxTokens: 1})
	defer small.Close()
	if err := rt.RouteHostInto(1, logits, small.NewPlan()); !errors.Is(err, router.ErrInvalidArgument) {
		t.Errorf("a plan of another router gave %v", err)
	}
}

func TestVersionAndKernelsAreReported(t *testing.T) {
	var major, minor, patch uint32
	parts := strings.Split(router.Version(), ".")
	if len(parts) != 3 {
		t.Fatalf("version %q", router.Version())
	}
	for i, dst := range []*uint32{&major, &minor, &patch} {
		for _, c := range parts[i] {
			*dst = *dst*10 + uint32(c-'0')
		}
	}
	if router.VersionNumber() != major*10000+minor*100+patch {
		t.Errorf("version number %d for %s", router.VersionNumber(), router.Version())
	}
	names := router.KernelNames()
	// Three families, each routed-only and shared-expert, each once without
	// and once with the routing flavours, then each routed-only with
	// sqrt-softplus scoring, then the wide kernels of both modes, in the
	// header's order.
	var expected []string
	for _, flavours := range []string{"", "_flavours"} {
		for _, family := range []string{"tiny", "small", "large"} {
			for _, mode := range []string{"routed", "shared"} {
				expected = append(expected, family+"_"+mode+flavours)
			}
		}
	}
	for _, family := range []string{"tiny", "small", "large"} {
		expected = append(expected, family+"_routed_sqrt_softplus")
	}
	for _, family := range []string{"tiny", "small", "large"} {
		for _, mode := range []string{"routed", "shared"} {
			expected = append(expected, family+"_"+mode+"_wide")
		}
	}
	if strings.Join(names, " ") != strings.Join(expected, " ") || router.KernelCount() != 21 {
		t.Fatalf("%d kernels %v, want %v", router.KernelCount(), names, expected)
	}
	for i, name := range names {
		archs, err := router.KernelImages(i)
		if err != nil || len(archs) == 0 {
			t.Fatalf("%s: %v %v", name, archs, err)
		}
		for _, a := range archs {
			if a != 90 && a != 100 && a != 103 {
				t.Errorf("%s: image arch %d", name, a)
			}
		}
	}
}

func TestEntryPointsAreNamedOnceEach(t *testing.T) {
	names := router.EntryPointNames()
	seen := map[string]bool{}
	for _, name := range names {
		if name == "" || seen[name] {
			t.Errorf("entry point %q empty or named twice in %v", name, names)
		}
		seen[name] = true
	}
	if len(names) == 0 {
		t.Fatal("no entry points")
	}
}

// A router Close released, or one New did not make, is not live: every call
// answers ErrInvalidHandle as the library does for such a handle, and a
// second Close does nothing.
func TestClosedRouterIsAnInvalidHandle(t *testing.T) {
	closed, err := router.New(router.Params{NumExperts: 8, TopK: 2, BlockM: 4, MaxTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	closed.Close()
	var nilRouter *router.Router
	logits := make([]float32, 2*8)
	for _, c := range []struct {
		name string
		r    *router.Router
		want error
	}{{"closed", closed, router.ErrInvalidHandle}, {"zero", &router.Router{}, router.ErrInvalidHandle},
		{"nil", nilRouter, router.ErrNullPointer}} {
		_, selectErr := c.r.Select(2, h100)
		_, candidatesErr := c.r.Candidates(2, h100)
		calls := map[string]error{
			"Select":        selectErr,
			"Candidates":    candidatesErr,
			"RouteHostWith": c.r.RouteHostWith(2, router.LogitsOfF32(logits), router.Inputs{}, closed.NewPlan()),
			"Route":         c.r.Route(2, 0, &router.DeviceBuffers{}, 0),
			"RouteWithPlan": c.r.RouteWithPlan(2, 0, &router.DeviceBuffers{}, router.Selection{}, 0),
		}
		for call, err := range calls {
			if !errors.Is(err, c.want) {
				t.Errorf("%s router: %s gave %v, want %v", c.name, call, err, c.want)
			}
		}
	}
}

// gpuOutputs are the device buffers of one call, every byte 0x5A (the
// workspace zeroed).
type gpuOutputs struct {
	arrays  []cudatest.Array // ids, weights, sorted, blocks, live, counts, offsets, pairs, workspace
	buffers router.DeviceBuffers
}

func newGPUOutputs(t *testing.T, z router.Sizes) gpuOutputs {
	t.Helper()
	var o gpuOutputs
	for _, n := range []int{4 * z.TopkIDs, 4 * z.TopkWeights, 4 * z.SortedTokenIDs, 4 * z.ExpertIDs, 4,
		4 * z.ExpertCounts, 4 * z.ExpertOffsets, 4 * z.PairToSorted, z.WorkspaceBytes} {
		fill := byte(0x5A)
		if len(o.arrays) == 8 {
			fill = 0
		}
		a, err := cudatest.Alloc(n, fill)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Free)
		o.arrays = append(o.arrays, a)
	}
	a := func(i int) uintptr { return o.arrays[i].Address }
	o.buffers = router.DeviceBuffers{
		TopkIDs: a(0), TopkWeights: a(1), SortedTokenIDs: a(2), SortedTokenIDsCapacity: z.SortedTokenIDs,
		ExpertIDs: a(3), ExpertIDsCapacity: z.ExpertIDs, NumTokensPostPadded: a(4), ExpertCounts: a(5),
		ExpertOffsets: a(6), PairToSorted: a(7), Workspace: a(8), WorkspaceBytes: z.WorkspaceBytes,
	}
	return o
}

// download gives every output but the workspace as int32 values, and the
// weights.
func (o gpuOutputs) download(t *testing.T) ([][]int32, []float32) {
	t.Helper()
	var ints [][]int32
	for _, a := range o.arrays[:8] {
		v, err := a.Int32s()
		if err != nil {
			t.Fatal(err)
		}
		ints = append(ints, v)
	}
	weights, err := o.arrays[1].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return ints, weights
}

// The library's own plan and every candidate route as the CPU reference, a
// plan that is not a candidate is refused; without a GPU both calls report
// that there is no driver or device.
func TestGPURouteMatchesTheReferenceOrReportsNoGPU(t *testing.T) {
	r := &rng{seed(t)}
	p := router.Params{NumExperts: 128, TopK: 8, BlockM: 16, MaxTokens: 300}
	m := p.MaxTokens
	rt, err := router.New(p)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	z := rt.Sizes()
	logits := randomLogits(r, m, p.NumExperts)
	host, err := rt.RouteHost(m, logits)
	if err != nil {
		t.Fatal(err)
	}

	avail, why, err := cudatest.Open()
	if err != nil {
		t.Fatal(err)
	}
	if avail != cudatest.Ready {
		// The same calls with host memory where device memory would be: the
		// library must refuse before touching any of it.
		fill := func(n int) []int32 {
			s := make([]int32, n+1)
			for i := range s {
				s[i] = poison
			}
			return s
		}
		ids, weights, sorted, blocks, live := fill(z.TopkIDs), fill(z.TopkWeights), fill(z.SortedTokenIDs), fill(z.ExpertIDs), fill(1)
		workspace := make([]uint64, z.WorkspaceBytes/8+1)
		addr := func(s []int32) uintptr { return uintptr(unsafe.Pointer(&s[0])) }
		buffers := &router.DeviceBuffers{
			TopkIDs: addr(ids), TopkWeights: addr(weights), SortedTokenIDs: addr(sorted),
			SortedTokenIDsCapacity: z.SortedTokenIDs, ExpertIDs: addr(blocks), ExpertIDsCapacity: z.ExpertIDs,
			NumTokensPostPadded: addr(live), Workspace: uintptr(unsafe.Pointer(&workspace[0])),
			WorkspaceBytes: z.WorkspaceBytes,
		}
		candidates, err := rt.Candidates(m, h100)
		if err != nil {
			t.Fatal(err)
		}
		address := uintptr(unsafe.Pointer(&logits[0]))
		for _, err := range []error{rt.Route(m, address, buffers, 0), rt.RouteWithPlan(m, address, buffers, candidates[0], 0)} {
			if !errors.Is(err, router.ErrNoDriver) && !errors.Is(err, router.ErrNoDevice) {
				t.Fatalf("without a GPU (%s) the route said %v", why, err)
			}
			t.Logf("GPU part skipped: %s; the route call said %q", why, err)
		}
		for _, s := range [][]int32{ids, weights, sorted, blocks, live} {
			for i, x := range s {
				if x != poison {
					t.Fatalf("a refused route wrote element %d", i)
				}
			}
		}
		runtime.KeepAlive(workspace)
		return
	}

	dLogits, err := cudatest.UploadFloat32(logits)
	if err != nil {
		t.Fatal(err)
	}
	defer dLogits.Free()
	device, err := router.QueryDeviceAttributes(0)
	if err != nil {
		t.Fatal(err)
	}
	candidates, err := rt.Candidates(m, device)
	if err != nil || len(candidates) == 0 {
		t.Fatalf("candidates %v, %v", candidates, err)
	}
	// nil: the library's own plan, through Route.
	plans := []*router.Selection{nil}
	for i := range candidates {
		plans = append(plans, &candidates[i])
	}
	for _, plan := range plans {
		out := newGPUOutputs(t, z)
		if plan == nil {
			err = rt.Route(m, dLogits.Address, &out.buffers, 0)
		} else {
			err = rt.RouteWithPlan(m, dLogits.Address, &out.buffers, *plan, 0)
		}
		if err != nil {
			t.Fatalf("GPU route with %+v: %v", plan, err)
		}
		if err := cudatest.Synchronize(); err != nil {
			t.Fatalf("the route kernel failed with %+v: %v", plan, err)
		}
		ints, weights := out.download(t)
		v := poison
		gpu := outputs{ints[0], weights, ints[2], ints[3], ints[4][0], ints[5], ints[6], ints[7], &v}
		if err := checkContract(p, m, logits, gpu); err != nil {
			t.Fatalf("GPU result with %+v: %v", plan, err)
		}
		for _, c := range []struct {
			name      string
			got, want []int32
		}{
			{"topk_ids", gpu.TopkIDs, host.TopkIDs},
			{"sorted_token_ids", gpu.SortedTokenIDs[:len(host.SortedTokenIDs)], host.SortedTokenIDs},
			{"expert_ids", gpu.ExpertIDs[:len(host.ExpertIDs)], host.ExpertIDs},
			{"pair_to_sorted", gpu.PairToSorted, host.PairToSorted},
		} {
			if err := equal(fmt.Sprintf("GPU %s with %+v vs CPU", c.name, plan), c.got, c.want); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("GPU route of %d tokens with %+v matches the CPU reference (%s)", m, plan, why)
	}

	// A plan that is not a candidate is refused, nothing written.
	used := map[int]bool{}
	for _, c := range candidates {
		used[c.EntryPointIndex] = true
	}
	refused := candidates[0]
	for used[refused.EntryPointIndex] {
		refused.EntryPointIndex++
	}
	out := newGPUOutputs(t, z)
	if err := rt.RouteWithPlan(m, dLogits.Address, &out.buffers, refused, 0); !errors.Is(err, router.ErrInvalidArgument) {
		t.Fatalf("a plan that is not a candidate (%+v) gave %v", refused, err)
	}
	ints, _ := out.download(t)
	for i, s := range ints {
		for j, x := range s {
			if x != poison {
				t.Fatalf("a refused route wrote output %d, element %d", i, j)
			}
		}
	}
}
