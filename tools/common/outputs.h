/*
 * One set of route outputs and the alphamoe_buffers that point at it, in
 * host or device memory: allocation (optionally with a guard zone behind
 * each array), poisoning, and copies between a device set and a host set.
 * The CUDA functions return the runtime's error and print nothing, so
 * that each caller reports it its own way.
 */
#ifndef ALPHAMOE_TOOLS_OUTPUTS_H
#define ALPHAMOE_TOOLS_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "alphamoe/router.h"

typedef struct output_set {
    int32_t *topk_ids;
    float *topk_weights;
    int32_t *sorted_token_ids;
    int32_t *expert_ids;
    int32_t *num_tokens_post_padded;
    int32_t *expert_counts;  /* optional */
    int32_t *expert_offsets; /* optional */
    int32_t *pair_to_sorted; /* optional */
} output_set;

#define OUTPUT_COUNT 8

/* The optional outputs a set holds, OR-ed. */
enum {
    OUTPUT_EXPERT_COUNTS = 1u << 0,
    OUTPUT_EXPERT_OFFSETS = 1u << 1,
    OUTPUT_PAIR_TO_SORTED = 1u << 2,
    OUTPUT_ALL_OPTIONAL = OUTPUT_EXPERT_COUNTS | OUTPUT_EXPERT_OFFSETS | OUTPUT_PAIR_TO_SORTED
};

typedef struct buffer_slot {
    void **ptr;
    size_t bytes;     /* the array's, guard included */
    const char *name; /* "topk_ids", ... */
} buffer_slot;

/* Zero-sized outputs (M == 0) still get a few bytes: the required
 * pointers must not be NULL even when nothing is written through them. */
size_t alloc_bytes(int64_t bytes);
/* Every output of s with its size plus guard_bytes (at least 4 bytes), in
 * the order of output_set. */
void output_slots(output_set *s, const alphamoe_sizes *z, size_t guard_bytes, buffer_slot slots[OUTPUT_COUNT]);
/* Whether slot i of output_slots belongs to a set with the optional
 * outputs named in `optional`. */
bool output_in_set(int i, unsigned optional);

/* Zeroed host memory for the required outputs and the optional ones
 * named in `optional`. Returns 0, or -1 when memory runs out. */
int host_outputs_alloc(output_set *s, const alphamoe_sizes *z, unsigned optional, size_t guard_bytes);
void host_outputs_free(output_set *s);

/* Device memory for the same (cudaMalloc each); free releases what the
 * set holds. */
cudaError_t device_outputs_alloc(output_set *s, const alphamoe_sizes *z, unsigned optional, size_t guard_bytes);
cudaError_t device_outputs_free(output_set *s);

/* Every array of the device set, guard included, set to `byte`. */
cudaError_t device_outputs_poison(const output_set *dev, const alphamoe_sizes *z, size_t guard_bytes, int byte,
                                  cudaStream_t stream);
/* Copies every array both sets hold, guard included, and waits for the
 * copies. */
cudaError_t outputs_copy(output_set *to, const output_set *from, const alphamoe_sizes *z, size_t guard_bytes,
                         enum cudaMemcpyKind kind, cudaStream_t stream);

/* Buffers for a call writing into s; the outputs s leaves NULL are not
 * requested. */
alphamoe_buffers buffers_for(const output_set *s, const alphamoe_sizes *z, void *workspace, size_t workspace_bytes,
                             const float *bias, const int32_t *expert_map);
/* The outputs b points at. */
output_set outputs_of(const alphamoe_buffers *b);

#endif
