package router_test

// Every routing flavour through the package: each Params field reaches the
// library (read back normalized, or refused with its own status), and the
// CPU reference routes sigmoid scoring with groups and scaling, bf16 and
// fp16 logits and both kinds of expert parallelism as README's contract says;
// the plans of a hypothetical device (the selection and its candidates) need
// no GPU either.

import (
	"errors"
	"math"
	"sort"
	"strings"
	"testing"

	router "github.com/alphamoe/alphamoe-router/packaging/go"
)

func newRouter(t *testing.T, p router.Params) *router.Router {
	t.Helper()
	r, err := router.New(p)
	if err != nil {
		t.Fatalf("%+v: %v", p, err)
	}
	t.Cleanup(r.Close)
	return r
}

func routeWith(t *testing.T, r *router.Router, m int, logits router.Logits, in router.Inputs) *router.Plan {
	t.Helper()
	plan := r.NewPlan()
	plan.Fill(poison, poisonWeight)
	if err := r.RouteHostWith(m, logits, in, plan); err != nil {
		t.Fatal(err)
	}
	return plan
}

func uniformLogits(r *rng, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.uniform(-6, 6)
	}
	return v
}

func TestEveryFieldReachesTheLibrary(t *testing.T) {
	set := router.Params{NumExperts: 64, TopK: 6, BlockM: 32, MaxTokens: 100, LogitsRowStride: 70,
		Flags: router.FlagNoRenormalize | router.FlagCorrectionBias, ForceSpecialization: router.SpecializationSmall,
		Scoring: router.ScoringSigmoid, LogitsType: router.LogitsBF16, NumGroups: 8, TopkGroups: 3,
		RoutedScalingFactor: 2.5, LocalExpertBegin: 16, LocalExpertCount: 24}
	r := newRouter(t, set)
	if got := r.Params(); got != set {
		t.Errorf("params read back %+v, set %+v", got, set)
	}
	if z := r.Sizes(); z.ExpertCounts != 24 || z.ExpertOffsets != 25 || z.NumTokensPostPadded != 1 {
		t.Errorf("sizes %+v for 24 local experts", z)
	}
	normalized := newRouter(t, router.Params{NumExperts: 64, TopK: 6, BlockM: 32, MaxTokens: 100}).Params()
	if normalized.LogitsRowStride != 64 || normalized.NumGroups != 1 || normalized.TopkGroups != 1 ||
		normalized.RoutedScalingFactor != 1 || normalized.LocalExpertCount != 64 {
		t.Errorf("zeros read back as %+v", normalized)
	}

	base := router.Params{NumExperts: 64, TopK: 6, BlockM: 32, MaxTokens: 100}
	with := func(change func(*router.Params)) router.Params {
		p := base
		change(&p)
		return p
	}
	for _, c := range []struct {
		p    router.Params
		want error
	}{
		{with(func(p *router.Params) { p.Scoring = 7 }), router.ErrScoring},
		{with(func(p *router.Params) { p.Flags = router.FlagCorrectionBias }), router.ErrScoring},
		{with(func(p *router.Params) { p.LogitsType = 9 }), router.ErrLogitsType},
		{with(func(p *router.Params) { p.NumGroups = 5 }), router.ErrGroups},
		{with(func(p *router.Params) { p.NumGroups, p.TopkGroups = 8, 9 }), router.ErrGroups},
		{with(func(p *router.Params) { p.RoutedScalingFactor = -1 }), router.ErrScalingFactor},
		{with(func(p *router.Params) { p.RoutedScalingFactor = float32(math.NaN()) }), router.ErrScalingFactor},
		{with(func(p *router.Params) { p.LocalExpertBegin, p.LocalExpertCount = 60, 8 }), router.ErrExpertParallel},
		{with(func(p *router.Params) { p.Flags = router.FlagExpertMap }), router.ErrExpertParallel},
		{with(func(p *router.Params) { p.ForceSpecialization = 9 }), router.ErrSpecialization},
	} {
		if _, err := router.New(c.p); !errors.Is(err, c.want) {
			t.Errorf("%+v gave %v, want %v", c.p, err, c.want)
		}
	}
}

func sigmoid(x float32) float64 { return 1 / (1 + math.Exp(-float64(x))) }

// Sigmoid scoring, groups ranked by their best logit, the best TopkGroups
// kept, weights renormalized (or not) and scaled.
func TestSigmoidGroupsAndScalingFollowTheContract(t *testing.T) {
	r := &rng{seed(t)}
	const e, k, groups, kept, m, bm = 64, 6, 8, 3, 37, 8
	for _, c := range []struct {
		flags uint32
		scale float32
	}{{0, 2.5}, {router.FlagNoRenormalize, 1}} {
		rt := newRouter(t, router.Params{NumExperts: e, TopK: k, BlockM: bm, MaxTokens: m, Flags: c.flags,
			Scoring: router.ScoringSigmoid, NumGroups: groups, TopkGroups: kept, RoutedScalingFactor: c.scale})
		logits := uniformLogits(r, m*e)
		plan := routeWith(t, rt, m, router.LogitsOfF32(logits), router.Inputs{})
		const perGroup = e / groups
		for tok := 0; tok < m; tok++ {
			row := logits[tok*e : (tok+1)*e]
			best := func(g int) float32 {
				b := float32(math.Inf(-1))
				for _, x := range row[g*perGroup : (g+1)*perGroup] {
					b = float32(math.Max(float64(b), float64(x)))
				}
				return b
			}
			order := []int{0, 1, 2, 3, 4, 5, 6, 7}
			sort.SliceStable(order, func(i, j int) bool { return best(order[i]) > best(order[j]) })
			var experts []int
			for x := 0; x < e; x++ {
				for _, g := range order[:kept] {
					if x/perGroup == g {
						experts = append(experts, x)
					}
				}
			}
			sort.SliceStable(experts, func(i, j int) bool { return row[experts[i]] > row[experts[j]] })
			sum := 0.0
			for _, x := range experts[:k] {
				sum += sigmoid(row[x])
			}
			if c.flags != 0 {
				sum = 1
			}
			for j, x := range experts[:k] {
				if plan.TopkIDs[tok*k+j] != int32(x) {
					t.Fatalf("token %d: ids %v, the contract ranks %v", tok, plan.TopkIDs[tok*k:(tok+1)*k], experts[:k])
				}
				want := float64(c.scale) * sigmoid(row[x]) / sum
				if got := float64(plan.TopkWeights[tok*k+j]); !(math.Abs(got-want) <= 4e-6*math.Max(1, float64(c.scale))) {
					t.Fatalf("token %d slot %d: weight %v, the contract %v", tok, j, got, want)
				}
			}
		}
		if err := checkPlan(bm, m*k, e, func(x int32) int { return int(x) }, hostOutputs(plan)); err != nil {
			t.Fatal(err)
		}
	}
}

// A bias of +1 lifts its experts' keys above every unbiased score in (0, 1):
// they are the ones chosen, and the weights ignore the bias.
func TestCorrectionBiasSteersTheChoiceOnly(t *testing.T) {
	r := &rng{seed(t)}
	const e, k, m = 32, 4, 20
	rt := newRouter(t, router.Params{NumExperts: e, TopK: k, BlockM: 4, MaxTokens: m,
		Flags: router.FlagCorrectionBias, Scoring: router.ScoringSigmoid})
	logits := uniformLogits(r, m*e)
	bias := make([]float32, e)
	for x := 1; x < e; x += 3 {
		bias[x] = 1
	}
	plan := routeWith(t, rt, m, router.LogitsOfF32(logits), router.Inputs{CorrectionBias: bias})
	for tok := 0; tok < m; tok++ {
		row, sum := logits[tok*e:(tok+1)*e], 0.0
		for _, x := range plan.TopkIDs[tok*k : (tok+1)*k] {
			if bias[x] == 0 {
				t.Fatalf("token %d: expert %d has no bias but was chosen", tok, x)
			}
			sum += sigmoid(row[x])
		}
		for j, x := range plan.TopkIDs[tok*k : (tok+1)*k] {
			if want := sigmoid(row[x]) / sum; !(math.Abs(float64(plan.TopkWeights[tok*k+j])-want) <= 4e-6) {
				t.Fatalf("token %d slot %d: weight %v, the contract %v", tok, j, plan.TopkWeights[tok*k+j], want)
			}
		}
	}
	if err := rt.RouteHostWith(m, router.LogitsOfF32(logits), router.Inputs{}, rt.NewPlan()); !errors.Is(err, router.ErrNullPointer) {
		t.Errorf("a biased router without its bias gave %v", err)
	}
}

// bf16 and fp16 logits route exactly as fp32 logits of the same values.
func TestHalfLogitsRouteAsTheirFP32Values(t *testing.T) {
	r := &rng{seed(t)}
	const e, k, m = 48, 5, 30
	bf16, f16 := make([]uint16, m*e), make([]uint16, m*e)
	wideBF16, wideF16 := make([]float32, m*e), make([]float32, m*e)
	for i := range bf16 {
		bf16[i] = uint16(math.Float32bits(r.uniform(-6, 6)) >> 16)
		wideBF16[i] = math.Float32frombits(uint32(bf16[i]) << 16)
		// Finite fp16: any sign, exponent field 0..30, any mantissa.
		f16[i] = uint16(r.next())&0x83ff | uint16(r.next()%31)<<10
		wideF16[i] = halfValue(f16[i])
	}
	plain := newRouter(t, router.Params{NumExperts: e, TopK: k, BlockM: 16, MaxTokens: m})
	for _, c := range []struct {
		typ    router.LogitsType
		logits router.Logits
		wide   []float32
	}{{router.LogitsBF16, router.LogitsOfBF16(bf16), wideBF16}, {router.LogitsF16, router.LogitsOfF16(f16), wideF16}} {
		rt := newRouter(t, router.Params{NumExperts: e, TopK: k, BlockM: 16, MaxTokens: m, LogitsType: c.typ})
		plan := routeWith(t, rt, m, c.logits, router.Inputs{})
		want := routeWith(t, plain, m, router.LogitsOfF32(c.wide), router.Inputs{})
		if err := checkContract(plain.Params(), m, c.wide, hostOutputs(want)); err != nil {
			t.Fatal(err)
		}
		for i := range want.TopkIDs {
			if plan.TopkIDs[i] != want.TopkIDs[i] || math.Float32bits(plan.TopkWeights[i]) != math.Float32bits(want.TopkWeights[i]) {
				t.Fatalf("type %d, pair %d: (%d, %v), fp32 gives (%d, %v)", c.typ, i, plan.TopkIDs[i], plan.TopkWeights[i],
					want.TopkIDs[i], want.TopkWeights[i])
			}
		}
		if _, err := rt.RouteHost(m, c.wide); !errors.Is(err, router.ErrLogitsType) {
			t.Errorf("fp32 logits on a type %d router gave %v", c.typ, err)
		}
	}
}

// halfValue: IEEE binary16 bits to the fp32 of the same value.
func halfValue(h uint16) float32 {
	sign := float32(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exponent, mantissa := int(h>>10&0x1f), float64(h&0x3ff)
	switch exponent {
	case 0:
		return sign * float32(math.Ldexp(mantissa, -24))
	case 31:
		if mantissa == 0 {
			return sign * float32(math.Inf(1))
		}
		return float32(math.NaN())
	}
	return sign * float32(math.Ldexp(1024+mantissa, exponent-25))
}

// A local range and a map: ids and weights as without expert parallelism,
// the plan over the local experts in local ids.
func TestExpertParallelismPlansTheLocalExperts(t *testing.T) {
	r := &rng{seed(t)}
	const e, k, bm, m, l = 40, 4, 8, 25, 10
	logits := uniformLogits(r, m*e)
	full := routeWith(t, newRouter(t, router.Params{NumExperts: e, TopK: k, BlockM: bm, MaxTokens: m}), m,
		router.LogitsOfF32(logits), router.Inputs{})
	expertMap := make([]int32, e)
	for i := range expertMap {
		expertMap[i] = int32(r.next()%14) - 2 // -2..11 over L = 10
	}
	for _, c := range []struct {
		p     router.Params
		in    router.Inputs
		local func(int32) int
	}{
		{router.Params{NumExperts: e, TopK: k, BlockM: bm, MaxTokens: m, LocalExpertBegin: 12, LocalExpertCount: l},
			router.Inputs{}, func(g int32) int { return int(g) - 12 }},
		{router.Params{NumExperts: e, TopK: k, BlockM: bm, MaxTokens: m, Flags: router.FlagExpertMap, LocalExpertCount: l},
			router.Inputs{ExpertMap: expertMap}, func(g int32) int { return int(expertMap[g]) }},
	} {
		rt := newRouter(t, c.p)
		plan := routeWith(t, rt, m, router.LogitsOfF32(logits), c.in)
		if err := equal("EP topk_ids", plan.TopkIDs, full.TopkIDs); err != nil {
			t.Fatal(err)
		}
		for i := range full.TopkWeights {
			if plan.TopkWeights[i] != full.TopkWeights[i] {
				t.Fatalf("pair %d: weight %v, without expert parallelism %v", i, plan.TopkWeights[i], full.TopkWeights[i])
			}
		}
		local := func(g int32) int {
			if x := c.local(g); x >= 0 && x < l {
				return x
			}
			return -1
		}
		if err := checkPlan(bm, m*k, l, local, hostOutputs(plan)); err != nil {
			t.Fatalf("%+v: %v", c.p, err)
		}
		if c.in.ExpertMap != nil {
			err := rt.RouteHostWith(m, router.LogitsOfF32(logits), router.Inputs{ExpertMap: expertMap[1:]}, rt.NewPlan())
			if !errors.Is(err, router.ErrInvalidArgument) {
				t.Errorf("a map of %d values gave %v", e-1, err)
			}
		}
	}
}

// Logits of another shape are refused, never read as a shorter batch.
func TestLogitsOfAnotherShapeAreRefused(t *testing.T) {
	rt := newRouter(t, router.Params{NumExperts: 8, TopK: 2, BlockM: 4, MaxTokens: 3, LogitsRowStride: 10})
	for _, c := range []struct {
		m, n int
		ok   bool
	}{{3, 28, true}, {3, 30, true}, {2, 30, false}, {3, 21, false}, {0, 0, true}, {0, 8, false}} {
		_, err := rt.RouteHost(c.m, make([]float32, c.n))
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, router.ErrInvalidArgument)) {
			t.Errorf("%d tokens, %d values: %v", c.m, c.n, err)
		}
	}
}

// h100 is a device with an H100's attributes, made by hand: plans for it
// need no GPU.
var h100 = router.DeviceAttributes{ComputeCapability: 90, MultiprocessorCount: 132, CooperativeCTAsPerSM: 1,
	CooperativeLaunch: true, MaxClusterCTAs: 16}

// namesOf gives the names of the kernel and the entry point a plan gives by
// index; the entry point is one of its kernel's (the library names each
// after its kernel, as router_diagnostics.h's examples show).
func namesOf(t *testing.T, plan router.Selection) (kernel, entry string) {
	t.Helper()
	kernels, entries := router.KernelNames(), router.EntryPointNames()
	if plan.KernelIndex < 0 || plan.KernelIndex >= len(kernels) || plan.EntryPointIndex < 0 || plan.EntryPointIndex >= len(entries) {
		t.Fatalf("%+v names no kernel or no entry point", plan)
	}
	kernel, entry = kernels[plan.KernelIndex], entries[plan.EntryPointIndex]
	if !strings.HasPrefix(entry, "alphamoe_"+kernel+"_") {
		t.Errorf("%+v: entry point %s of kernel %s", plan, entry, kernel)
	}
	return kernel, entry
}

// The selection of a hypothetical device: a pure function of the
// parameters and the attributes, honouring a forced specialization.
func TestSelectionReportsEveryField(t *testing.T) {
	for _, forced := range []router.Specialization{router.SpecializationTiny, router.SpecializationSmall, router.SpecializationLarge} {
		rt := newRouter(t, router.Params{NumExperts: 128, TopK: 8, BlockM: 16, MaxTokens: 64, ForceSpecialization: forced})
		s, err := rt.Select(64, h100)
		if err != nil || s.Specialization != forced || s.ImageArch != 90 || s.GridCTAs < 1 || s.GridCTAs > 132 ||
			s.BlockThreads < 32 || s.TokensPerCTA < 1 || s.ClusterCTAs < 0 || s.ClusterCTAs > 16 ||
			(s.ClusterCTAs > 0 && !s.Cooperative) {
			t.Fatalf("forced %v: %+v, %v", forced, s, err)
		}
		if kernel, _ := namesOf(t, s); !strings.HasPrefix(kernel, forced.String()+"_") {
			t.Errorf("forced %v runs kernel %s", forced, kernel)
		}
	}
	names := []string{router.SpecializationAuto.String(), router.SpecializationTiny.String(),
		router.SpecializationSmall.String(), router.SpecializationLarge.String(), router.Specialization(9).String()}
	if want := []string{"auto", "tiny", "small", "large", ""}; !equalStrings(names, want) {
		t.Errorf("specialization names %q, want %q", names, want)
	}
}

// A cluster never holds more CTAs than the device's largest; 0 reads as 8.
func TestClustersFitTheDevice(t *testing.T) {
	rt := newRouter(t, router.Params{NumExperts: 128, TopK: 8, BlockM: 16, MaxTokens: 64,
		ForceSpecialization: router.SpecializationSmall})
	selectWith := func(maxClusterCTAs int) router.Selection {
		d := h100
		d.MaxClusterCTAs = maxClusterCTAs
		s, err := rt.Select(64, d)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, largest := range []int{1, 8, 16} {
		if s := selectWith(largest); s.ClusterCTAs > largest {
			t.Errorf("largest cluster %d: %+v", largest, s)
		}
	}
	if unset, eight := selectWith(0), selectWith(8); unset != eight {
		t.Errorf("max_cluster_ctas 0 gives %+v, 8 gives %+v", unset, eight)
	}
}

// The candidates of a call: the selection first, then other entry points
// on the same grid, each once; a plain call can also run on the flavoured
// kernel, a flavoured one only there.
func TestCandidatesRunTheSelectedGrid(t *testing.T) {
	plain := router.Params{NumExperts: 128, TopK: 8, BlockM: 16, MaxTokens: 4096}
	with := func(change func(*router.Params)) router.Params {
		p := plain
		change(&p)
		return p
	}
	shared := with(func(p *router.Params) { p.Flags = router.FlagSharedExpert })
	sigmoid := with(func(p *router.Params) { p.Scoring, p.NumGroups, p.TopkGroups = router.ScoringSigmoid, 8, 4 })
	bf16 := with(func(p *router.Params) { p.LogitsType = router.LogitsBF16 })
	for _, c := range []struct {
		p router.Params
		m int
	}{{plain, 1}, {plain, 64}, {plain, 300}, {plain, 4096}, {shared, 64}, {sigmoid, 300}, {bf16, 300}} {
		rt := newRouter(t, c.p)
		selected, err := rt.Select(c.m, h100)
		if err != nil {
			t.Fatal(err)
		}
		candidates, err := rt.Candidates(c.m, h100)
		if err != nil || len(candidates) == 0 || candidates[0] != selected {
			t.Fatalf("%+v, M = %d: candidates %+v, %v; selected %+v", c.p, c.m, candidates, err, selected)
		}
		entries := map[int]bool{}
		flavoured := 0
		for _, plan := range candidates {
			sameGrid := plan
			sameGrid.KernelIndex, sameGrid.EntryPointIndex = selected.KernelIndex, selected.EntryPointIndex
			if sameGrid != selected || entries[plan.EntryPointIndex] {
				t.Errorf("%+v, M = %d: candidate %+v on another grid or twice; selected %+v", c.p, c.m, plan, selected)
			}
			entries[plan.EntryPointIndex] = true
			if kernel, _ := namesOf(t, plan); strings.HasSuffix(kernel, "_flavours") {
				flavoured++
			}
		}
		switch {
		case c.p.Scoring == router.ScoringSigmoid && flavoured != len(candidates),
			c.p.Scoring == router.ScoringSoftmax && c.p.LogitsType == router.LogitsF32 && (flavoured == 0 || flavoured == len(candidates)):
			t.Errorf("%+v: %d of %d candidates on a flavoured kernel", c.p, flavoured, len(candidates))
		}
	}
	// Refused as the selection refuses: groups the kernels do not
	// implement, too many tokens, a device without multiprocessors or image.
	groups := router.Params{NumExperts: 512, TopK: 8, BlockM: 16, MaxTokens: 64, Scoring: router.ScoringSigmoid,
		NumGroups: 64, TopkGroups: 4}
	noSMs, sm75 := h100, h100
	noSMs.MultiprocessorCount, sm75.ComputeCapability = 0, 75
	for _, c := range []struct {
		p      router.Params
		m      int
		device router.DeviceAttributes
		want   error
	}{
		{groups, 64, h100, router.ErrUnsupportedFlavour},
		{plain, 4097, h100, router.ErrNumTokens},
		{plain, 64, noSMs, router.ErrInvalidArgument},
		{plain, 64, sm75, router.ErrNoImage},
	} {
		rt := newRouter(t, c.p)
		_, err := rt.Candidates(c.m, c.device)
		_, selectErr := rt.Select(c.m, c.device)
		if !errors.Is(err, c.want) || !errors.Is(selectErr, c.want) {
			t.Errorf("%+v, M = %d, %+v: candidates %v, select %v, want %v", c.p, c.m, c.device, err, selectErr, c.want)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// DeepSeek-V4's hash layers on the CPU reference: each token's experts are
// its row of the table, the weights its sqrt-softplus scores there,
// renormalized; a token id outside the vocabulary or an entry outside the
// experts is a pair of no expert (id -1, weight 0).
func TestHashRouting(t *testing.T) {
	const e, k, m, vocab = 32, 4, 24, 10
	r, err := router.New(router.Params{NumExperts: e, TopK: k, BlockM: 8, MaxTokens: m,
		Flags: router.FlagHashRouting, Scoring: router.ScoringSqrtSoftplus, VocabSize: vocab})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Params().VocabSize != vocab {
		t.Fatalf("vocab size read back as %d", r.Params().VocabSize)
	}
	table := make([]int32, vocab*k)
	for i := range table {
		table[i] = int32((i*7 + 3) % e)
	}
	table[5] = e // names no expert
	tokens := make([]int32, m)
	logits := make([]float32, m*e)
	for i := range tokens {
		tokens[i] = int32(i % (vocab + 2)) // vocab and vocab+1: outside
	}
	for i := range logits {
		logits[i] = float32(i%13)/4 - 1.5
	}
	plan := r.NewPlan()
	if err := r.RouteHostWith(m, router.LogitsOfF32(logits), router.Inputs{TokenIDs: tokens, HashTable: table}, plan); err != nil {
		t.Fatal(err)
	}
	ids, weights := plan.TopkIDs, plan.TopkWeights
	for tok := 0; tok < m; tok++ {
		v := int(tokens[tok])
		var s [k]float64
		var total float64
		for j := 0; j < k; j++ {
			want := int32(-1)
			if v < vocab && table[v*k+j] < e {
				want = table[v*k+j]
			}
			if ids[tok*k+j] != want {
				t.Fatalf("token %d slot %d: expert %d, want %d", tok, j, ids[tok*k+j], want)
			}
			if want >= 0 {
				x := float64(logits[tok*e+int(want)])
				s[j] = math.Sqrt(math.Log1p(math.Exp(x)))
			}
			total += s[j]
		}
		for j := 0; j < k; j++ {
			w := 0.0
			if total > 0 {
				w = s[j] / total
			}
			if math.Abs(float64(weights[tok*k+j])-w) > 4e-6 {
				t.Fatalf("token %d slot %d: weight %g, want %g", tok, j, weights[tok*k+j], w)
			}
		}
	}
	if _, err := router.New(router.Params{NumExperts: e, TopK: k, BlockM: 8, MaxTokens: m, VocabSize: vocab}); !errors.Is(err, router.ErrHashRouting) {
		t.Fatalf("a vocabulary without the flag: %v", err)
	}
}

// Redundant experts (EPLB) on the CPU reference: pair p of logical expert x
// takes replica p % ReplicaCount[x], physical id LogicalToPhysical[x*R +
// replica]; a count outside [1, R] or an id outside [0, P) is a pair of no
// expert. The weights are the unmapped call's, bit for bit, and
// PhysicalLoad gains one per mapped pair.
func TestRedundantExperts(t *testing.T) {
	const e, k, p, rs, m = 24, 4, 40, 3, 30
	g := &rng{state: seed(t)}
	logits := randomLogits(g, m, e)
	plain, err := router.New(router.Params{NumExperts: e, TopK: k, BlockM: 8, MaxTokens: m})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	base, err := plain.RouteHost(m, logits)
	if err != nil {
		t.Fatal(err)
	}
	params := router.Params{NumExperts: e, TopK: k, BlockM: 8, MaxTokens: m, Flags: router.FlagRedundantExperts,
		NumPhysicalExperts: p, ReplicaSlots: rs}
	r, err := router.New(params)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Params(); got.NumPhysicalExperts != p || got.ReplicaSlots != rs || got.LocalExpertCount != p {
		t.Fatalf("params read back as %+v", got)
	}
	counts := make([]int32, e)
	for i := range counts {
		counts[i] = 1 + int32(g.next()%rs)
	}
	counts[5], counts[6], counts[7] = 0, rs+1, 1
	table := make([]int32, e*rs)
	for i := range table {
		table[i] = int32(g.next() % p)
	}
	table[7*rs] = p // an id past the physical experts
	load := make([]int32, p)
	for i := range load {
		load[i] = 1 + int32(g.next()%100)
	}
	wantLoad := append([]int32(nil), load...)
	plan := r.NewPlan()
	in := router.Inputs{LogicalToPhysical: table, ReplicaCount: counts, PhysicalLoad: load}
	if err := r.RouteHostWith(m, router.LogitsOfF32(logits), in, plan); err != nil {
		t.Fatal(err)
	}
	for pair := 0; pair < m*k; pair++ {
		x := base.TopkIDs[pair]
		want := int32(-1)
		if c := counts[x]; c >= 1 && c <= rs {
			if q := table[int(x)*rs+pair%int(c)]; q >= 0 && q < p {
				want = q
			}
		}
		if want >= 0 {
			wantLoad[want]++
		}
		if plan.TopkIDs[pair] != want {
			t.Fatalf("pair %d: physical expert %d, want %d", pair, plan.TopkIDs[pair], want)
		}
		if math.Float32bits(plan.TopkWeights[pair]) != math.Float32bits(base.TopkWeights[pair]) {
			t.Fatalf("pair %d: weight %g, the unmapped call's %g", pair, plan.TopkWeights[pair], base.TopkWeights[pair])
		}
	}
	for q := range load {
		if load[q] != wantLoad[q] {
			t.Fatalf("physical_load[%d] = %d, want %d", q, load[q], wantLoad[q])
		}
	}
	params.ReplicaSlots = p + 1
	if _, err := router.New(params); !errors.Is(err, router.ErrRedundantExperts) {
		t.Fatalf("replica slots past P: %v", err)
	}
}
