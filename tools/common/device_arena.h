/*
 * Device memory for the buffers of a routing call, reserved at once and
 * handed out in a fixed order. The benchmark reserves it when the device
 * is opened, before the library has loaded any code.
 *
 * A cold read's latency depends on the address: rows in some 4 KiB
 * granules arrive later than in others, the same granules every time.
 * Buffers allocated per shape would land wherever the code loaded before
 * them left room, so two builds of the benchmark would read the same
 * call's logits at different addresses; from the arena, every build puts
 * every buffer at the same offset.
 */
#ifndef ALPHAMOE_TOOLS_DEVICE_ARENA_H
#define ALPHAMOE_TOOLS_DEVICE_ARENA_H

#include <stdbool.h>
#include <stddef.h>

typedef struct device_arena {
    char *base;
    size_t bytes;
    size_t origin; /* where the first buffer goes (--arena-offset-kib) */
    size_t used;
} device_arena;

/* Every buffer starts at a multiple of this. */
#define ARENA_ALIGN ((size_t)4096)

int arena_open(device_arena *a, size_t bytes);
void arena_close(device_arena *a);

/* The next `bytes` of the arena at an ARENA_ALIGN boundary, or NULL with a message
 * naming `what` when they do not fit. Buffers are taken in a fixed order
 * and given back all at once. */
void *arena_take(device_arena *a, size_t bytes, const char *what);
void arena_release_all(device_arena *a);
bool arena_in_use(const device_arena *a);
/* Moves where the first buffer goes, to measure a call at other addresses
 * (rounded up to 4 KiB, as every buffer is). */
void arena_set_origin(device_arena *a, size_t origin);

#endif
