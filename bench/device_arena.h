/*
 * Device memory for the buffers a timed call reads and writes, reserved
 * once when the device is opened, before the library has loaded any code.
 *
 * A cold read's latency on the H200 depends on the address: rows in some
 * 4 KiB granules arrive about 200 cycles later than in others, the same
 * granules every time (RESULTS "2026-12-02 (fifteenth run)", run 2).
 * Buffers allocated per shape landed wherever the code loaded before them
 * left room, so two builds of the benchmark put the same call's logits at
 * different addresses and measured the same kernel up to 0.2 us apart.
 * From the arena, every build puts every buffer at the same offset.
 */
#ifndef ALPHAMOE_BENCH_DEVICE_ARENA_H
#define ALPHAMOE_BENCH_DEVICE_ARENA_H

#include <stdbool.h>
#include <stddef.h>

typedef struct device_arena {
    char *base;
    size_t bytes;
    size_t origin; /* where the first buffer goes (--arena-offset-kib) */
    size_t used;
} device_arena;

/* Enough for the largest shape the benchmark measures (E512, 16384
 * tokens: 32 MiB of fp32 logits) with its outputs and workspace, at any
 * --arena-offset-kib up to 64 MiB. */
#define DEVICE_ARENA_BYTES ((size_t)192 << 20)

int arena_open(device_arena *a, size_t bytes);
void arena_close(device_arena *a);

/* The next `bytes` of the arena at a 4 KiB boundary, or NULL with a message
 * naming `what` when they do not fit. Buffers are taken in a fixed order
 * and given back all at once. */
void *arena_take(device_arena *a, size_t bytes, const char *what);
void arena_release_all(device_arena *a);
bool arena_in_use(const device_arena *a);
/* Moves where the first buffer goes, to measure a call at other addresses
 * (rounded up to 4 KiB, as every buffer is). */
void arena_set_origin(device_arena *a, size_t origin);

#endif
