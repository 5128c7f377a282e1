/* The workspace's layout, in 32-bit words: one header for the kernels, the
 * host library that sizes it and the tools that read it (C and C++).
 *
 * It must be zero before the first call; every call leaves it ready for the
 * next (the small kernel's barrier word's low bits as it found them, the
 * large kernel's next exchange set zero), so it needs zeroing only once. */
#ifndef ALPHAMOE_KERNELS_WORKSPACE_H
#define ALPHAMOE_KERNELS_WORKSPACE_H

#include <stdint.h>

#if defined(__CUDACC__)
#define ALPHAMOE_WS_FUNCTION static inline __host__ __device__
#else
#define ALPHAMOE_WS_FUNCTION static inline
#endif
#ifdef __cplusplus
#define ALPHAMOE_WS_ASSERT(cond, why) static_assert(cond, why)
#else
#define ALPHAMOE_WS_ASSERT(cond, why) _Static_assert(cond, why)
#endif

enum {
    /* The limits the layout is sized for: experts, and CTAs of a grid that
     * exchange counts through the workspace (kernels/route_args.h). */
    kWsMaxExperts = 512,
    kWsMaxGridCtas = 256,
    /* The small kernel's cooperative grid meets at this barrier word. */
    kWsBarrierWord = 0,
    /* Profiling builds (phase_clocks): CTA 0 stamps clock64() at its phase
     * boundaries into header words 8.., as int64 values. */
    kWsPhaseClockWord = 8,
    kPhaseClockCount = 7,
    /* The phase word: bit 31, flipped once per call that exchanges by
     * group sums (the large kernels, the wide grids planned so), names the
     * exchange set the call uses; the other bits stay zero. */
    kWsLargePhaseWord = 32,
    kWsHeaderWords = 64,
    /* The large kernel's CTAs form groups of consecutive CTAs (about sqrt of
     * the grid each, so at most 16 groups of at most 16). */
    kMaxCtaGroups = 16,
    kMaxGroupCtas = 16,
    /* Two exchange sets follow the header (group sums). A call uses the
     * set its phase word names and zeroes the whole other set for the next
     * call; sets of a fixed size at fixed places keep that true whatever the
     * L of the calls sharing the workspace. In a set:
     * - word 0: CTAs arrived (each adds 1 once its counts are on their way);
     * - group sums, [g * kWsMaxExperts + e]: (CTAs of group g that added <<
     *   kGroupSumArrivedShift) + pairs of expert e in their token ranges;
     * - member counts, [c * kWsMaxExperts + e]: 1 + pairs of expert e in CTA
     *   c's token range (0: not written yet).
     * Every word says by itself whether it is complete, so a CTA needs no
     * release fence before it arrives, nor an acquire after it. */
    kGroupSumArrivedShift = 27,
    kWsSetArrivalsWord = 0,
    kWsSetGroupSumsWord = 32,
    kWsSetMemberCountsWord = kWsSetGroupSumsWord + kMaxCtaGroups * kWsMaxExperts,
    kWsExchangeSetWords = kWsSetMemberCountsWord + kWsMaxGridCtas * kWsMaxExperts,
    kWsExchangeSetsWord = kWsHeaderWords,
    /* Then the small kernel's count table, counts[c * L + e] (L: the call's
     * plan experts): pairs of expert e in CTA c's token range. At most
     * kWsMaxGridCtas rows of at most E. */
    kWsCountTableWord = kWsExchangeSetsWord + 2 * kWsExchangeSetWords,
    /* Profiling builds: global-timer stamps of every CTA (int64) after the
     * count table, in words only their workspaces have: over the table, a
     * CTA done with the exchange would overwrite counts that small's
     * cooperative grid has still to read. */
    kCtaTimerStamps = 4,
    kCtaTimerWords = kWsMaxGridCtas * kCtaTimerStamps * 2
};

ALPHAMOE_WS_ASSERT(kWsMaxGridCtas <= kMaxCtaGroups * kMaxGroupCtas, "groups must cover the largest grid");
ALPHAMOE_WS_ASSERT(kMaxGroupCtas < (1 << (32 - kGroupSumArrivedShift)), "a group's CTAs fit above the pairs");
ALPHAMOE_WS_ASSERT(kWsExchangeSetWords % 32 == 0, "sets start 128-byte aligned");
ALPHAMOE_WS_ASSERT(kWsCountTableWord % 32 == 0, "the count table starts 128-byte aligned");

/* The first word past the count table of a router of num_experts experts. */
ALPHAMOE_WS_FUNCTION int64_t alphamoe_count_table_end_word(int32_t num_experts) {
    return kWsCountTableWord + (int64_t)num_experts * kWsMaxGridCtas;
}

/* Words of a router's workspace; with_phase_clocks: a profiling build's. */
ALPHAMOE_WS_FUNCTION int64_t alphamoe_workspace_words(int32_t num_experts, int with_phase_clocks) {
    return alphamoe_count_table_end_word(num_experts) + (with_phase_clocks ? kCtaTimerWords : 0);
}

#endif
