/*
 * The shapes alphamoe-bench measures, their targets, the stock pipeline's
 * reference figures, and the token counts of the specialization sweep.
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
    double stock_us; /* the stock pipeline's reference figure (kStockReference); 0: none */
    int32_t flavour; /* FLAVOUR_* of bench_flavours.h */
} bench_shape;

#define SHAPE_COUNT 55

/* The stock pipeline's figures are data, measured once on one GPU, not by
 * this program: shown only on a device of that name, labelled as such. */
typedef struct stock_reference {
    const char *gpu;  /* the device name they were measured on */
    const char *what; /* what was measured, and how */
} stock_reference;

extern const stock_reference kStockReference;

/* Whether the stock figures were measured on a device of this name. */
bool stock_applies(const char *device_name);

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
