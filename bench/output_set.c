#include "output_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t alloc_bytes(int64_t bytes) { return bytes > 4 ? (size_t)bytes : 4; }

void output_slots(output_set *s, const alphamoe_sizes *z, buffer_slot slots[OUTPUT_COUNT]) {
    slots[0] = (buffer_slot){(void **)&s->topk_ids, alloc_bytes(z->topk_ids.bytes)};
    slots[1] = (buffer_slot){(void **)&s->topk_weights, alloc_bytes(z->topk_weights.bytes)};
    slots[2] = (buffer_slot){(void **)&s->sorted_token_ids, alloc_bytes(z->sorted_token_ids.bytes)};
    slots[3] = (buffer_slot){(void **)&s->expert_ids, alloc_bytes(z->expert_ids.bytes)};
    slots[4] = (buffer_slot){(void **)&s->num_tokens_post_padded, alloc_bytes(z->num_tokens_post_padded.bytes)};
    slots[5] = (buffer_slot){(void **)&s->expert_counts, alloc_bytes(z->expert_counts.bytes)};
    slots[6] = (buffer_slot){(void **)&s->expert_offsets, alloc_bytes(z->expert_offsets.bytes)};
}

int host_outputs_alloc(output_set *s, const alphamoe_sizes *z, const char *prog) {
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(s, z, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i) {
        *slots[i].ptr = calloc(slots[i].bytes, 1);
        if (*slots[i].ptr == NULL) {
            fprintf(stderr, "%s: out of host memory (%zu bytes)\n", prog, slots[i].bytes);
            return -1;
        }
    }
    return 0;
}

void host_outputs_free(output_set *s) {
    free(s->topk_ids);
    free(s->topk_weights);
    free(s->sorted_token_ids);
    free(s->expert_ids);
    free(s->num_tokens_post_padded);
    free(s->expert_counts);
    free(s->expert_offsets);
    memset(s, 0, sizeof(*s));
}

alphamoe_buffers buffers_for(const output_set *s, const alphamoe_sizes *z, void *workspace,
                             size_t workspace_bytes, const float *bias, const int32_t *expert_map) {
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
    b.sorted_token_ids_capacity = z->sorted_token_ids.elements;
    b.expert_ids_capacity = z->expert_ids.elements;
    b.workspace = workspace;
    b.workspace_bytes = workspace_bytes;
    b.correction_bias = bias;
    b.expert_map = expert_map;
    return b;
}
