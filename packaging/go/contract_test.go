package router_test

// The routing contract (docs/contract.md) computed here,
// independently of the library, and compared with what a call wrote.

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	router "github.com/alphamoe/alphamoe-router/packaging/go"
)

// outputs are one call's results; SortedTokenIDs and ExpertIDs are whole
// buffers, so that what lies past the live plan can be checked.
type outputs struct {
	TopkIDs             []int32
	TopkWeights         []float32
	SortedTokenIDs      []int32
	ExpertIDs           []int32
	NumTokensPostPadded int32
	ExpertCounts        []int32
	ExpertOffsets       []int32
	PairToSorted        []int32
	Poison              *int32 // what every buffer held before the call
}

// ranksBefore: higher logit first, equal logits (-0 == +0) by lower id,
// NaN after every number.
func ranksBefore(la float32, a int, lb float32, b int) bool {
	na, nb := la != la, lb != lb
	switch {
	case na && nb:
		return a < b
	case na:
		return false
	case nb:
		return true
	}
	return la > lb || (la == lb && a < b)
}

func expectedIDs(row []float32, topK int, shared bool) []int {
	routed := len(row)
	if shared {
		routed--
	}
	order := make([]int, routed)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return ranksBefore(row[order[i]], order[i], row[order[j]], order[j]) })
	if !shared {
		return order[:topK]
	}
	return append(order[:topK-1:topK-1], len(row)-1)
}

// expectedWeights: softmax over the chosen logits in float64; NaN weighs 0,
// +inf ones share 1, all -inf/NaN give 0.
func expectedWeights(chosen []float32) []float64 {
	w := make([]float64, len(chosen))
	posInf := 0
	for _, l := range chosen {
		if math.IsInf(float64(l), 1) {
			posInf++
		}
	}
	if posInf > 0 {
		for j, l := range chosen {
			if math.IsInf(float64(l), 1) {
				w[j] = 1 / float64(posInf)
			}
		}
		return w
	}
	m, any := math.Inf(-1), false
	for _, l := range chosen {
		if f := float64(l); !math.IsNaN(f) && !math.IsInf(f, 0) {
			m, any = math.Max(m, f), true
		}
	}
	if !any {
		return w
	}
	sum := 0.0
	for j, l := range chosen {
		if f := float64(l); !math.IsNaN(f) && !math.IsInf(f, 0) {
			w[j] = math.Exp(f - m)
			sum += w[j]
		}
	}
	for j := range w {
		w[j] /= sum
	}
	return w
}

// expectedCapacity: blocks = min(E, P) + floor((P - min(E, P)) / block_m).
func expectedCapacity(p router.Params) int {
	pairs := p.MaxTokens * p.TopK
	first := p.NumExperts
	if pairs < first {
		first = pairs
	}
	return (first + (pairs-first)/p.BlockM) * p.BlockM
}

func checkContract(p router.Params, m int, logits []float32, out outputs) error {
	e, k, bm := p.NumExperts, p.TopK, p.BlockM
	stride := p.LogitsRowStride
	if stride == 0 {
		stride = e
	}
	shared := p.Flags&router.FlagSharedExpert != 0
	for t := 0; t < m; t++ {
		row := logits[t*stride : t*stride+e]
		want := expectedIDs(row, k, shared)
		chosen := make([]float32, k)
		for j, x := range want {
			if out.TopkIDs[t*k+j] != int32(x) {
				return fmt.Errorf("token %d: topk_ids %v, the contract ranks %v", t, out.TopkIDs[t*k:(t+1)*k], want)
			}
			chosen[j] = row[x]
		}
		for j, w := range expectedWeights(chosen) {
			if g := float64(out.TopkWeights[t*k+j]); !(math.Abs(g-w) <= 4e-6) {
				return fmt.Errorf("token %d slot %d: weight %v but softmax gives %v (tolerance 4e-6)", t, j, g, w)
			}
		}
	}
	return checkPlan(bm, m*k, e, func(x int32) int { return int(x) }, out)
}

// checkPlan: the plan of pairs pairs over l local experts, from the call's
// own TopkIDs; local gives each global expert its local id (-1: another
// rank owns it).
func checkPlan(bm, pairs, l int, local func(int32) int, out outputs) error {
	sentinel := int32(pairs)
	var sorted, blocks []int32
	counts := make([]int32, l)
	offsets := make([]int32, l+1)
	pairToSorted := make([]int32, pairs)
	for p := range pairToSorted {
		pairToSorted[p] = -1
	}
	for x := 0; x < l; x++ {
		offsets[x] = int32(len(sorted))
		for pair := 0; pair < pairs; pair++ {
			if local(out.TopkIDs[pair]) == x {
				pairToSorted[pair] = int32(len(sorted))
				sorted = append(sorted, int32(pair))
				counts[x]++
			}
		}
		for len(sorted)%bm != 0 {
			sorted = append(sorted, sentinel)
		}
		for len(blocks) < len(sorted)/bm {
			blocks = append(blocks, int32(x))
		}
	}
	offsets[l] = int32(len(sorted))
	live := len(sorted)
	if int(out.NumTokensPostPadded) != live {
		return fmt.Errorf("num_tokens_post_padded %d but the groups take %d", out.NumTokensPostPadded, live)
	}
	if err := equal("sorted_token_ids", out.SortedTokenIDs, sorted); err != nil {
		return err
	}
	if err := equal("expert_ids", out.ExpertIDs, blocks); err != nil {
		return err
	}
	if err := equal("expert_counts", out.ExpertCounts, counts); err != nil {
		return err
	}
	if err := equal("expert_offsets", out.ExpertOffsets, offsets); err != nil {
		return err
	}
	if err := equal("pair_to_sorted", out.PairToSorted, pairToSorted); err != nil {
		return err
	}
	if out.Poison != nil {
		for i := live; i < len(out.SortedTokenIDs); i++ {
			if out.SortedTokenIDs[i] != *out.Poison {
				return fmt.Errorf("sorted_token_ids[%d] past the live length %d was written", i, live)
			}
		}
		for i := len(blocks); i < len(out.ExpertIDs); i++ {
			if out.ExpertIDs[i] != *out.Poison {
				return fmt.Errorf("expert_ids[%d] past the live blocks was written", i)
			}
		}
	}
	return nil
}

// equal: got starts with want.
func equal(name string, got, want []int32) error {
	if len(got) < len(want) {
		return fmt.Errorf("%s holds %d values, the contract %d", name, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%s[%d] = %d, the contract says %d", name, i, got[i], want[i])
		}
	}
	return nil
}

// rng is splitmix64, reproducible from the printed seed.
type rng struct{ state uint64 }

func (r *rng) next() uint64 {
	r.state += 0x9E3779B97F4A7C15
	z := r.state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func (r *rng) uniform(lo, hi float32) float32 {
	return lo + (hi-lo)*float32(r.next()>>40)/float32(1<<24)
}

// seed is $ALPHAMOE_TEST_SEED, else the clock; logged so a failure replays.
func seed(t *testing.T) uint64 {
	t.Helper()
	s := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ALPHAMOE_TEST_SEED"), 10, 64); err == nil {
		s = v
	}
	t.Logf("seed %d (ALPHAMOE_TEST_SEED=%d replays it)", s, s)
	return s
}

// randomLogits: most rows uniform in [-8, 8), some with heavy ties (-0 and
// +0 among them), some mixing NaN and infinities.
func randomLogits(r *rng, m, e int) []float32 {
	logits := make([]float32, m*e)
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	for t := 0; t < m; t++ {
		kind := r.next() % 8
		for x := 0; x < e; x++ {
			v := r.uniform(-8, 8)
			switch {
			case kind == 0:
				v = []float32{negZero, 0, 1, -1}[r.next()%4]
			case kind == 1 && r.next()%2 == 0:
				v = []float32{nan, inf, -inf}[r.next()%3]
			}
			logits[t*e+x] = v
		}
	}
	return logits
}
