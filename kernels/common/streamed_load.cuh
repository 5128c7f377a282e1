// Loads of the logits, which a call reads once: cached as streaming data
// (ld.global.cs), whose lines L1 and L2 evict first. Where L2 is full of
// dirty lines (the benchmark's eviction buffer, a serving step's earlier
// kernels), a line an ordinary load brings in evicts one of them, whose
// write-back competes with the reads; streaming lines mostly replace one
// another. Measured on the H200 (bench/RESULTS.md): E512 16384 tokens and
// the read floor of its logits both 1.4 us faster, no other shape moved
// by more than 0.03 us. The same loads with an evict-first L2 policy
// (createpolicy, L2::cache_hint) made 8 to 512 tokens 0.03 to 0.16 us
// slower: the conditional loads became branches.
#ifndef ALPHAMOE_KERNELS_STREAMED_LOAD_CUH
#define ALPHAMOE_KERNELS_STREAMED_LOAD_CUH

namespace alphamoe {

__device__ __forceinline__ float load_streamed(const float *p) { return __ldcs(p); }

__device__ __forceinline__ unsigned short load_streamed(const unsigned short *p) { return __ldcs(p); }

}  // namespace alphamoe

#endif
