#include "outputs.h"

#include <stdlib.h>
#include <string.h>

size_t alloc_bytes(int64_t bytes) { return bytes > 4 ? (size_t)bytes : 4; }

void output_slots(output_set *s, const alphamoe_sizes *z, size_t guard_bytes, buffer_slot slots[OUTPUT_COUNT]) {
    const struct {
        void **ptr;
        int64_t bytes;
        const char *name;
    } all[OUTPUT_COUNT] = {
        {(void **)&s->topk_ids, z->topk_ids.bytes, "topk_ids"},
        {(void **)&s->topk_weights, z->topk_weights.bytes, "topk_weights"},
        {(void **)&s->sorted_token_ids, z->sorted_token_ids.bytes, "sorted_token_ids"},
        {(void **)&s->expert_ids, z->expert_ids.bytes, "expert_ids"},
        {(void **)&s->num_tokens_post_padded, z->num_tokens_post_padded.bytes, "num_tokens_post_padded"},
        {(void **)&s->expert_counts, z->expert_counts.bytes, "expert_counts"},
        {(void **)&s->expert_offsets, z->expert_offsets.bytes, "expert_offsets"},
        {(void **)&s->pair_to_sorted, z->pair_to_sorted.bytes, "pair_to_sorted"},
    };
    for (int i = 0; i < OUTPUT_COUNT; ++i)
        slots[i] = (buffer_slot){all[i].ptr, alloc_bytes(all[i].bytes + (int64_t)guard_bytes), all[i].name};
}

/* The five required outputs come first, the optional ones in the order of
 * their OUTPUT_* bits. */
bool output_in_set(int i, unsigned optional) { return i < 5 || (optional & (1u << (i - 5))) != 0; }

int host_outputs_alloc(output_set *s, const alphamoe_sizes *z, unsigned optional, size_t guard_bytes) {
    memset(s, 0, sizeof(*s));
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(s, z, guard_bytes, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i)
        if (output_in_set(i, optional) && (*slots[i].ptr = calloc(slots[i].bytes, 1)) == NULL) return -1;
    return 0;
}

void host_outputs_free(output_set *s) {
    buffer_slot slots[OUTPUT_COUNT];
    alphamoe_sizes none;
    memset(&none, 0, sizeof(none));
    output_slots(s, &none, 0, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i) free(*slots[i].ptr);
    memset(s, 0, sizeof(*s));
}

cudaError_t device_outputs_alloc(output_set *s, const alphamoe_sizes *z, unsigned optional, size_t guard_bytes) {
    memset(s, 0, sizeof(*s));
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(s, z, guard_bytes, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i) {
        if (!output_in_set(i, optional)) continue;
        const cudaError_t e = cudaMalloc(slots[i].ptr, slots[i].bytes);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

cudaError_t device_outputs_free(output_set *s) {
    buffer_slot slots[OUTPUT_COUNT];
    alphamoe_sizes none;
    memset(&none, 0, sizeof(none));
    output_slots(s, &none, 0, slots);
    cudaError_t first = cudaSuccess;
    for (int i = 0; i < OUTPUT_COUNT; ++i) {
        const cudaError_t e = *slots[i].ptr ? cudaFree(*slots[i].ptr) : cudaSuccess;
        if (first == cudaSuccess) first = e;
    }
    memset(s, 0, sizeof(*s));
    return first;
}

cudaError_t device_outputs_poison(const output_set *dev, const alphamoe_sizes *z, size_t guard_bytes, int byte,
                                  cudaStream_t stream) {
    output_set d = *dev;
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(&d, z, guard_bytes, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i) {
        if (*slots[i].ptr == NULL) continue;
        const cudaError_t e = cudaMemsetAsync(*slots[i].ptr, byte, slots[i].bytes, stream);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

cudaError_t outputs_copy(output_set *to, const output_set *from, const alphamoe_sizes *z, size_t guard_bytes,
                         enum cudaMemcpyKind kind, cudaStream_t stream) {
    output_set f = *from;
    buffer_slot dst[OUTPUT_COUNT], src[OUTPUT_COUNT];
    output_slots(to, z, guard_bytes, dst);
    output_slots(&f, z, guard_bytes, src);
    for (int i = 0; i < OUTPUT_COUNT; ++i) {
        if (*dst[i].ptr == NULL || *src[i].ptr == NULL) continue;
        const cudaError_t e = cudaMemcpyAsync(*dst[i].ptr, *src[i].ptr, dst[i].bytes, kind, stream);
        if (e != cudaSuccess) return e;
    }
    return cudaStreamSynchronize(stream);
}

alphamoe_buffers buffers_for(const output_set *s, const alphamoe_sizes *z, void *workspace, size_t workspace_bytes,
                             const float *bias, const int32_t *expert_map) {
    alphamoe_buffers b;
    memset(&b, 0, sizeof(b));
    b.struct_size = sizeof(b);
    b.topk_ids = s->topk_ids;
    b.topk_weights = s->topk_weights;
    b.sorted_token_ids = s->sorted_token_ids;
    b.expert_ids = s->expert_ids;
    b.num_tokens_post_padded = s->num_tokens_post_padded;
    b.expert_counts = s->expert_counts;
    b.expert_offsets = s->expert_offsets;
    b.pair_to_sorted = s->pair_to_sorted;
    b.sorted_token_ids_capacity = z->sorted_token_ids.elements;
    b.expert_ids_capacity = z->expert_ids.elements;
    b.workspace = workspace;
    b.workspace_bytes = workspace_bytes;
    b.correction_bias = bias;
    b.expert_map = expert_map;
    return b;
}

output_set outputs_of(const alphamoe_buffers *b) {
    const output_set s = {b->topk_ids, b->topk_weights, b->sorted_token_ids, b->expert_ids, b->num_tokens_post_padded,
                          b->expert_counts, b->expert_offsets, b->pair_to_sorted};
    return s;
}
