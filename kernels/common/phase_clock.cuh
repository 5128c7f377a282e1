// Profiling builds (-Dphase_clocks): a kernel's phase boundaries, stamped
// into the workspace for tools/phase_clocks.c; in any other build nothing.
#ifndef ALPHAMOE_KERNELS_PHASE_CLOCK_CUH
#define ALPHAMOE_KERNELS_PHASE_CLOCK_CUH

#include "route_args.h"

namespace alphamoe {

#if ALPHAMOE_PHASE_CLOCKS
// Profiling builds: CTA 0's SM clock at every phase boundary, and thread 0
// of every CTA stamps the global timer (ns, one clock for all SMs) at
// entry, once the CTA's tokens are counted, once the counts are exchanged
// and at the end (phases 0, 3, 4 and 6): 4 int64 values per CTA, past the
// count table (kCtaTimerWords, workspace.h).
// The CTA and thread are read afresh at each stamp (volatile), so the
// stamps keep no register live across the phases they time.
__device__ __forceinline__ void phase_clock(const RouteArgs &a, int phase) {
    unsigned cta, thread;
    asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(cta));
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(thread));
    if (cta == 0 && thread == 0)
        reinterpret_cast<long long *>(a.workspace + kWsPhaseClockWord)[phase] = clock64();
    const int slot = phase == 0 ? 0 : phase == 3 ? 1 : phase == 4 ? 2 : phase == 6 ? 3 : -1;
    if (slot >= 0 && thread == 0) {
        unsigned long long now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        uint32_t *timers = a.workspace + alphamoe_count_table_end_word(a.num_experts);
        reinterpret_cast<unsigned long long *>(timers)[cta * 4 + slot] = now;
    }
}
#else
__device__ __forceinline__ void phase_clock(const RouteArgs &, int) {}
#endif

}  // namespace alphamoe

#endif
