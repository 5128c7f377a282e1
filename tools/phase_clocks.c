#include "phase_clocks.h"

#include <alphamoe/router_diagnostics.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workspace.h"

enum {
    PHASE_CLOCK_WORD = kWsPhaseClockWord,
    PHASE_CLOCK_COUNT = kPhaseClockCount,
    MAX_GRID_CTAS = kWsMaxGridCtas,
    CTA_TIMER_STAMPS = kCtaTimerStamps
};

static const char *const kCtaTimerNames[CTA_TIMER_STAMPS] = {"entry", "tokens counted", "counts exchanged",
                                                             "done"};

static int compare_ll(const void *a, const void *b) {
    const long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Every CTA's global-timer stamps, relative to the earliest entry: the
 * smallest, median and largest over the CTAs of each stamp, and of the
 * time from entry to counted tokens; then the CTA that counted last. */
static void print_cta_timers(const unsigned long long *stamps) {
    int ctas = 0;
    unsigned long long first = 0;
    while (ctas < MAX_GRID_CTAS && stamps[ctas * CTA_TIMER_STAMPS] != 0) {
        const unsigned long long entry = stamps[ctas * CTA_TIMER_STAMPS];
        if (ctas == 0 || entry < first) first = entry;
        ++ctas;
    }
    if (ctas == 0) return;
    long long *column = malloc((size_t)ctas * sizeof(*column));
    if (column == NULL) return;
    printf("global timer over the grid's %d CTAs, ns after the first entry (min / median / max):\n", ctas);
    /* The stamps, then two spans: entry to counted tokens, exchanged
     * counts to done (the plan's own time in each CTA). */
    static const char *const kSpanNames[2] = {"entry to tokens counted", "counts exchanged to done"};
    for (int slot = 0; slot < CTA_TIMER_STAMPS + 2; ++slot) {
        for (int c = 0; c < ctas; ++c) {
            const unsigned long long *t = stamps + c * CTA_TIMER_STAMPS;
            column[c] = slot < CTA_TIMER_STAMPS ? (long long)(t[slot] - first)
                        : slot == CTA_TIMER_STAMPS ? (long long)(t[1] - t[0])
                                                   : (long long)(t[3] - t[2]);
        }
        qsort(column, (size_t)ctas, sizeof(*column), compare_ll);
        printf("  %-32s %8lld %8lld %8lld\n",
               slot < CTA_TIMER_STAMPS ? kCtaTimerNames[slot] : kSpanNames[slot - CTA_TIMER_STAMPS], column[0],
               column[ctas / 2], column[ctas - 1]);
    }
    int last_counted = 0, last_done = 0;
    for (int c = 1; c < ctas; ++c) {
        if (stamps[c * CTA_TIMER_STAMPS + 1] > stamps[last_counted * CTA_TIMER_STAMPS + 1]) last_counted = c;
        if (stamps[c * CTA_TIMER_STAMPS + 3] > stamps[last_done * CTA_TIMER_STAMPS + 3]) last_done = c;
    }
    const unsigned long long *t = stamps + last_counted * CTA_TIMER_STAMPS;
    printf("  last to count: CTA %d, entry %lld, counted %lld\n", last_counted, (long long)(t[0] - first),
           (long long)(t[1] - first));
    t = stamps + last_done * CTA_TIMER_STAMPS;
    printf("  last done: CTA %d, exchanged %lld, done %lld\n", last_done, (long long)(t[2] - first),
           (long long)(t[3] - first));
    /* The CTAs that finish latest, in order, when the grid is large. */
    enum { LATEST = 8 };
    if (ctas > LATEST) {
        int latest[LATEST];
        printf("  the %d CTAs done last (CTA: exchanged to done):", LATEST);
        for (int n = 0; n < LATEST; ++n) {
            int pick = -1;
            for (int c = 0; c < ctas; ++c) {
                int taken = 0;
                for (int m = 0; m < n; ++m) taken |= latest[m] == c;
                if (!taken && (pick < 0 || stamps[c * CTA_TIMER_STAMPS + 3] > stamps[pick * CTA_TIMER_STAMPS + 3]))
                    pick = c;
            }
            latest[n] = pick;
            const unsigned long long *p = stamps + pick * CTA_TIMER_STAMPS;
            printf(" %d: %lld", pick, (long long)(p[3] - p[2]));
        }
        printf("\n");
    }
    free(column);
}

/* Each kernel family stamps the same seven boundaries around its own
 * phases (kernels/common/route_kernel.cuh, kernels/wide.cu). */
static const char *const kPhaseNames[PHASE_CLOCK_COUNT - 1] = {
    "wait for the preceding kernel", "select tokens (warp 0)", "CTA expert counts",
    "count exchange (cluster or grid barriers)", "place pairs", "rest of the plan"};
static const char *const kWidePhaseNames[PHASE_CLOCK_COUNT - 1] = {
    "wait for the preceding kernel", "rank and write tokens (warps)", "warps' counts as prefixes",
    "count exchange (grid barriers)", "padded starts and padding", "place pairs"};
static const char *const kWideOneTokenPhaseNames[PHASE_CLOCK_COUNT - 1] = {
    "wait for the preceding kernel", "rank the token (CTA)", "weigh and write it (warp 0)",
    "plan its pairs (warp 0)", "CTA barrier", "padding and expert table"};

/* The names of the phases of the kernel the call runs. */
static const char *const *phase_names(const alphamoe_router *router, int32_t num_tokens, int device) {
    alphamoe_device_attributes attributes = {0};
    attributes.struct_size = sizeof(attributes);
    alphamoe_selection selection = {0};
    selection.struct_size = sizeof(selection);
    if (alphamoe_device_attributes_query(device, &attributes) != ALPHAMOE_OK ||
        alphamoe_router_select(router, num_tokens, &attributes, &selection) != ALPHAMOE_OK)
        return kPhaseNames;
    const char *kernel = alphamoe_kernel_name(selection.kernel_index);
    const char *entry = alphamoe_entry_point_name(selection.entry_point_index);
    if (kernel == NULL || strstr(kernel, "wide") == NULL) return kPhaseNames;
    return entry != NULL && strstr(entry, "one_token") != NULL ? kWideOneTokenPhaseNames : kWidePhaseNames;
}

int phase_clocks_report(const alphamoe_router *router, int32_t num_tokens, const float *logits,
                        const alphamoe_buffers *buffers, cudaStream_t stream) {
    alphamoe_params params = {0};
    params.struct_size = sizeof(params);
    if (alphamoe_router_get_params(router, &params) != ALPHAMOE_OK) return -1;
    int device = 0, l2_bytes = 0, clock_khz = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
    void *flush = NULL;
    const size_t flush_bytes = 2 * (size_t)l2_bytes;
    if (cudaMalloc(&flush, flush_bytes) != cudaSuccess) return -1;
    long long stamps[PHASE_CLOCK_COUNT] = {0};
    static unsigned long long cta_stamps[MAX_GRID_CTAS * CTA_TIMER_STAMPS];
    const size_t timer_word = (size_t)alphamoe_count_table_end_word(params.num_experts);
    char *cta_timers = (char *)buffers->workspace + timer_word * 4;
    int rc = -1;
    /* Zero marks a CTA the grid does not have. */
    if (cudaMemsetAsync(cta_timers, 0, sizeof(cta_stamps), stream) == cudaSuccess &&
        cudaMemsetAsync(flush, 1, flush_bytes, stream) == cudaSuccess &&
        alphamoe_route(router, num_tokens, logits, buffers, stream) == ALPHAMOE_OK &&
        cudaStreamSynchronize(stream) == cudaSuccess &&
        cudaMemcpy(stamps, (const char *)buffers->workspace + PHASE_CLOCK_WORD * 4, sizeof(stamps),
                   cudaMemcpyDeviceToHost) == cudaSuccess &&
        cudaMemcpy(cta_stamps, cta_timers, sizeof(cta_stamps), cudaMemcpyDeviceToHost) == cudaSuccess) {
        printf("phases of CTA 0 in one call after L2 eviction (SM clock, %.0f MHz nominal):\n",
               clock_khz / 1000.0);
        const char *const *names = phase_names(router, num_tokens, device);
        for (int i = 1; i < PHASE_CLOCK_COUNT; ++i) {
            const long long cycles = stamps[i] - stamps[i - 1];
            printf("  %-32s %8lld cycles %7.2f us\n", names[i - 1], cycles,
                   clock_khz > 0 ? cycles * 1000.0 / clock_khz : 0.0);
        }
        print_cta_timers(cta_stamps);
        rc = 0;
    }
    cudaFree(flush);
    return rc;
}
