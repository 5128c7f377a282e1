/* The workspace layout in 32-bit words, as plain C preprocessor constants:
 * the kernels' constants (route_args.h) are defined from these, and the
 * programs that read a workspace from the host (the phase clocks of a
 * profiling build, the GPU tests' check that a call left it ready) include
 * this header too, so none of them copies a number. */
#ifndef ALPHAMOE_KERNELS_WORKSPACE_LAYOUT_H
#define ALPHAMOE_KERNELS_WORKSPACE_LAYOUT_H

/* The maxima the workspace is sized for: experts a row, CTAs a grid, and
 * groups of CTAs in the large kernel's exchange. */
#define ALPHAMOE_WS_MAX_EXPERTS 512
#define ALPHAMOE_WS_MAX_GRID_CTAS 256
#define ALPHAMOE_WS_MAX_CTA_GROUPS 16

/* The header: the small kernel's grid barrier, CTA 0's phase clocks
 * (profiling builds, int64 values), the large kernel's phase word. */
#define ALPHAMOE_WS_BARRIER_WORD 0
#define ALPHAMOE_WS_PHASE_CLOCK_WORD 8
#define ALPHAMOE_WS_PHASE_CLOCK_COUNT 7
#define ALPHAMOE_WS_LARGE_PHASE_WORD 32
#define ALPHAMOE_WS_HEADER_WORDS 64

/* Two exchange sets of the large kernel follow the header; in a set, the
 * arrivals word, the group sums, then the member counts. */
#define ALPHAMOE_WS_SET_ARRIVALS_WORD 0
#define ALPHAMOE_WS_SET_GROUP_SUMS_WORD 32
#define ALPHAMOE_WS_SET_MEMBER_COUNTS_WORD \
    (ALPHAMOE_WS_SET_GROUP_SUMS_WORD + ALPHAMOE_WS_MAX_CTA_GROUPS * ALPHAMOE_WS_MAX_EXPERTS)
#define ALPHAMOE_WS_EXCHANGE_SET_WORDS \
    (ALPHAMOE_WS_SET_MEMBER_COUNTS_WORD + ALPHAMOE_WS_MAX_GRID_CTAS * ALPHAMOE_WS_MAX_EXPERTS)
#define ALPHAMOE_WS_EXCHANGE_SETS_WORD ALPHAMOE_WS_HEADER_WORDS

/* Then the small kernel's count table, at most ALPHAMOE_WS_MAX_GRID_CTAS
 * rows of the plan's experts; in profiling builds, after the table of a
 * router's experts, ALPHAMOE_WS_CTA_TIMER_STAMPS int64 global-timer stamps
 * a CTA. */
#define ALPHAMOE_WS_COUNT_TABLE_WORD (ALPHAMOE_WS_EXCHANGE_SETS_WORD + 2 * ALPHAMOE_WS_EXCHANGE_SET_WORDS)
#define ALPHAMOE_WS_CTA_TIMER_STAMPS 4

#endif
