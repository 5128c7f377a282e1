package router_test

// The installed library through this package: the CPU reference against
// the contract computed here, bad input, and a GPU route that matches the
// reference or reports that there is no driver or device.

import (
	"errors"
	"math"
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
		{router.Params{NumExperts: 513, TopK: 4, BlockM: 16, MaxTokens: 8}, router.StatusNumExperts},
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
	// and once with the routing flavours, in the header's order.
	var expected []string
	for _, flavours := range []string{"", "_flavours"} {
		for _, family := range []string{"tiny", "small", "large"} {
			for _, mode := range []string{"routed", "shared"} {
				expected = append(expected, family+"_"+mode+flavours)
			}
		}
	}
	if strings.Join(names, " ") != strings.Join(expected, " ") {
		t.Fatalf("kernels %v, want %v", names, expected)
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
		// The same call with host memory where device memory would be: the
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
		err := rt.Route(m, uintptr(unsafe.Pointer(&logits[0])), &router.DeviceBuffers{
			TopkIDs: addr(ids), TopkWeights: addr(weights), SortedTokenIDs: addr(sorted),
			SortedTokenIDsCapacity: z.SortedTokenIDs, ExpertIDs: addr(blocks), ExpertIDsCapacity: z.ExpertIDs,
			NumTokensPostPadded: addr(live), Workspace: uintptr(unsafe.Pointer(&workspace[0])),
			WorkspaceBytes: z.WorkspaceBytes,
		}, 0)
		if !errors.Is(err, router.ErrNoDriver) && !errors.Is(err, router.ErrNoDevice) {
			t.Fatalf("without a GPU (%s) the route said %v", why, err)
		}
		for _, s := range [][]int32{ids, weights, sorted, blocks, live} {
			for i, x := range s {
				if x != poison {
					t.Fatalf("a refused route wrote element %d", i)
				}
			}
		}
		t.Logf("GPU part skipped: %s; the route call said %q", why, err)
		return
	}

	alloc := func(bytes int, fill byte) cudatest.Array {
		a, err := cudatest.Alloc(bytes, fill)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Free)
		return a
	}
	dLogits, err := cudatest.UploadFloat32(logits)
	if err != nil {
		t.Fatal(err)
	}
	defer dLogits.Free()
	const fill = 0x5A
	dIDs, dWeights := alloc(4*z.TopkIDs, fill), alloc(4*z.TopkWeights, fill)
	dSorted, dBlocks, dLive := alloc(4*z.SortedTokenIDs, fill), alloc(4*z.ExpertIDs, fill), alloc(4, fill)
	dCounts, dOffsets, dPairs := alloc(4*z.ExpertCounts, fill), alloc(4*z.ExpertOffsets, fill), alloc(4*z.PairToSorted, fill)
	dWorkspace := alloc(z.WorkspaceBytes, 0)
	err = rt.Route(m, dLogits.Address, &router.DeviceBuffers{
		TopkIDs: dIDs.Address, TopkWeights: dWeights.Address,
		SortedTokenIDs: dSorted.Address, SortedTokenIDsCapacity: z.SortedTokenIDs,
		ExpertIDs: dBlocks.Address, ExpertIDsCapacity: z.ExpertIDs,
		NumTokensPostPadded: dLive.Address, ExpertCounts: dCounts.Address,
		ExpertOffsets: dOffsets.Address, PairToSorted: dPairs.Address,
		Workspace: dWorkspace.Address, WorkspaceBytes: z.WorkspaceBytes,
	}, 0)
	if err != nil {
		t.Fatalf("GPU route: %v", err)
	}
	if err := cudatest.Synchronize(); err != nil {
		t.Fatalf("the route kernel failed: %v", err)
	}
	ints := func(a cudatest.Array) []int32 {
		v, err := a.Int32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	weights, err := dWeights.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	v := poison
	gpu := outputs{ints(dIDs), weights, ints(dSorted), ints(dBlocks), ints(dLive)[0],
		ints(dCounts), ints(dOffsets), ints(dPairs), &v}
	if err := checkContract(p, m, logits, gpu); err != nil {
		t.Fatalf("GPU result: %v", err)
	}
	if err := equal("GPU topk_ids vs CPU", gpu.TopkIDs, host.TopkIDs); err != nil {
		t.Fatal(err)
	}
	if err := equal("GPU sorted_token_ids vs CPU", gpu.SortedTokenIDs, host.SortedTokenIDs); err != nil {
		t.Fatal(err)
	}
	if err := equal("GPU expert_ids vs CPU", gpu.ExpertIDs, host.ExpertIDs); err != nil {
		t.Fatal(err)
	}
	if err := equal("GPU pair_to_sorted vs CPU", gpu.PairToSorted, host.PairToSorted); err != nil {
		t.Fatal(err)
	}
	t.Logf("GPU route of %d tokens matches the CPU reference (%s)", m, why)
}
