package router

// Plan holds every output of a call in host memory, in buffers sized for
// a router's MaxTokens. The exported slices show the part the last call
// wrote; a later call into the same plan reuses the buffers.
type Plan struct {
	NumTokens           int
	TopkIDs             []int32   // [NumTokens*k], best expert first
	TopkWeights         []float32 // [NumTokens*k], the gate weights of the router's flavour
	SortedTokenIDs      []int32   // the live plan: pairs t*k+j grouped by expert, padded with NumTokens*k
	ExpertIDs           []int32   // the expert of each live block
	NumTokensPostPadded int       // the live length
	ExpertCounts        []int32   // [L] pairs per local expert (L = E without expert parallelism)
	ExpertOffsets       []int32   // [L+1] group starts
	PairToSorted        []int32   // [NumTokens*k] where each pair went; -1 for another rank's

	topK, blockM, localExperts int
	buf                        planBuffers
}

type planBuffers struct {
	ids, sorted, blocks, counts, offsets, pairs []int32
	weights                                     []float32
	live                                        [1]int32
}

// NewPlan allocates host buffers for every output of r, optional ones included.
func (r *Router) NewPlan() *Plan {
	z := r.Sizes()
	p := &Plan{
		topK:         int(r.params.top_k),
		blockM:       int(r.params.block_m),
		localExperts: z.ExpertCounts,
		buf: planBuffers{
			ids:     make([]int32, z.TopkIDs),
			weights: make([]float32, z.TopkWeights),
			sorted:  make([]int32, z.SortedTokenIDs),
			blocks:  make([]int32, z.ExpertIDs),
			counts:  make([]int32, z.ExpertCounts),
			offsets: make([]int32, z.ExpertOffsets),
			pairs:   make([]int32, z.PairToSorted),
		},
	}
	p.setView(0)
	return p
}

// SortedTokenIDsBuffer is the whole sorted_token_ids buffer, capacity included.
func (p *Plan) SortedTokenIDsBuffer() []int32 { return p.buf.sorted }

// ExpertIDsBuffer is the whole expert_ids buffer, capacity included.
func (p *Plan) ExpertIDsBuffer() []int32 { return p.buf.blocks }

// Fill sets every element of every buffer (ids and counts to id, weights
// to weight), e.g. to see what a call leaves untouched.
func (p *Plan) Fill(id int32, weight float32) {
	for _, s := range [][]int32{p.buf.ids, p.buf.sorted, p.buf.blocks, p.buf.counts, p.buf.offsets, p.buf.pairs} {
		for i := range s {
			s[i] = id
		}
	}
	for i := range p.buf.weights {
		p.buf.weights[i] = weight
	}
	p.buf.live[0] = id
	p.setView(p.NumTokens)
}

func (p *Plan) fits(r *Router) bool {
	z := r.Sizes()
	b := &p.buf
	return p.topK == int(r.params.top_k) && p.blockM == int(r.params.block_m) &&
		p.localExperts == z.ExpertCounts &&
		len(b.ids) >= z.TopkIDs && len(b.weights) >= z.TopkWeights && len(b.sorted) >= z.SortedTokenIDs &&
		len(b.blocks) >= z.ExpertIDs && len(b.counts) >= z.ExpertCounts &&
		len(b.offsets) >= z.ExpertOffsets && len(b.pairs) >= z.PairToSorted
}

// setView points the exported slices at what a call for numTokens wrote.
func (p *Plan) setView(numTokens int) {
	b := &p.buf
	pairs := numTokens * p.topK
	live := int(b.live[0])
	if live < 0 || live > len(b.sorted) {
		live = 0 // not written yet
	}
	p.NumTokens = numTokens
	p.NumTokensPostPadded = live
	p.TopkIDs = b.ids[:pairs]
	p.TopkWeights = b.weights[:pairs]
	p.SortedTokenIDs = b.sorted[:live]
	p.ExpertIDs = b.blocks[:live/p.blockM]
	p.ExpertCounts = b.counts
	p.ExpertOffsets = b.offsets
	p.PairToSorted = b.pairs[:pairs]
}
