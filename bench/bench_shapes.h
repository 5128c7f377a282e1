/*
 * The shapes alphamoe-bench measures, their targets and the stock pipeline's
 * figures on the H200, and the token counts of the specialization sweep.
 *
 * A shape is named e<E>-m<M>-k<k>-bm<block_m>, with "-shared" for the
 * shared-expert mode; --shapes takes a comma list of names or of indices
 * into the table (as --list prints it), or "all".
 */
#ifndef ALPHAMOE_BENCH_SHAPES_H
#define ALPHAMOE_BENCH_SHAPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum target_kind {
    TARGET_NONE,
    TARGET_MICROSECONDS,   /* median kernel time at most target_value us */
    TARGET_BANDWIDTH_RATIO /* at most target_value times the bandwidth floor */
} target_kind;

typedef struct bench_shape {
    char name[40];
    int32_t experts;
    int32_t tokens;
    int32_t top_k;
    int32_t block_m;
    bool shared;
    target_kind target;
    double target_value;
    double stock_us; /* stock top-k + align pipeline, CUPTI cold-L2 on the H200; 0: not measured */
    int32_t flavour; /* FLAVOUR_* of bench_flavours.h */
} bench_shape;

#define SHAPE_COUNT 44

/* Fills out[0..SHAPE_COUNT): every E512 shape followed by its shared twin,
 * then E256, E128 and E8, then the routing flavours (named with their
 * flavour as a suffix, e.g. e256-m4096-k8-bm64-deepseek-v3). */
void shape_table(bench_shape out[SHAPE_COUNT]);

/* Marks selected[i] for every shape the list names. Returns 0, or -1 after
 * saying which entry names nothing. */
int select_shapes(const char *list, const bench_shape *shapes, int32_t n, bool *selected);

/* "<=2.0us", "<=1.5x bw", "-". */
void format_target(const bench_shape *s, char *buf, size_t size);

int64_t shape_logits_bytes(const bench_shape *s);

/* The token counts of --sweep, and the shorter list of --sweep --quick. */
extern const int32_t kSweepTokens[];
extern const int32_t kSweepTokenCount;
extern const int32_t kQuickSweepTokens[];
extern const int32_t kQuickSweepTokenCount;

#endif
