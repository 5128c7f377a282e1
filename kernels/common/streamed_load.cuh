// Loads of the logits, which a call reads once: cached as streaming data
// (ld.global.cs), whose lines L1 and L2 evict first. Where L2 is full of
// dirty lines (the benchmark's eviction buffer, a serving step's earlier
// kernels), a line an ordinary load brings in evicts one of them, whose
// write-back competes with the reads; streaming lines mostly replace one
// another (e512-m16384-k10-bm8, and the read floor of its logits). An
// evict-first L2 policy (createpolicy, L2::cache_hint) instead turns the
// conditional loads into branches (e512-m8-k10-bm8 to e512-m512-k10-bm8).
#ifndef ALPHAMOE_KERNELS_STREAMED_LOAD_CUH
#define ALPHAMOE_KERNELS_STREAMED_LOAD_CUH

namespace alphamoe {

__device__ __forceinline__ float load_streamed(const float *p) { return __ldcs(p); }

__device__ __forceinline__ unsigned short load_streamed(const unsigned short *p) { return __ldcs(p); }

}  // namespace alphamoe

#endif
