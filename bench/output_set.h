/*
 * One set of route outputs and the alphamoe_buffers that point at it, shared
 * by alphamoe-route and alphamoe-bench. The pointers are host or device
 * memory depending on who allocated the set.
 */
#ifndef ALPHAMOE_BENCH_OUTPUT_SET_H
#define ALPHAMOE_BENCH_OUTPUT_SET_H

#include <stddef.h>
#include <stdint.h>

#include "alphamoe/router.h"

typedef struct output_set {
    int32_t *topk_ids;
    float *topk_weights;
    int32_t *sorted_token_ids;
    int32_t *expert_ids;
    int32_t *num_tokens_post_padded;
    int32_t *expert_counts;
    int32_t *expert_offsets;
} output_set;

#define OUTPUT_COUNT 7

typedef struct buffer_slot {
    void **ptr;
    size_t bytes;
} buffer_slot;

/* Zero-sized outputs (M == 0) still get a few bytes: the required
 * pointers must not be NULL even when nothing is written through them. */
size_t alloc_bytes(int64_t bytes);
/* Every output of s with its size, in the order of output_set. */
void output_slots(output_set *s, const alphamoe_sizes *z, buffer_slot slots[OUTPUT_COUNT]);
/* Zeroed host memory for every output; prog prefixes the message printed
 * when memory runs out. */
int host_outputs_alloc(output_set *s, const alphamoe_sizes *z, const char *prog);
void host_outputs_free(output_set *s);
/* Buffers for a call writing into s; the outputs s leaves NULL are not
 * requested. */
alphamoe_buffers buffers_for(const output_set *s, const alphamoe_sizes *z, void *workspace,
                             size_t workspace_bytes, const float *bias, const int32_t *expert_map);

#endif
