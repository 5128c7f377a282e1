/* Prints the size and every field's offset of the public structs, as the
 * installed header lays them out, one "struct.field offset" a line ("struct
 * size" for the size). The Rust and Python tests compare their own struct
 * mirrors with this. Build: cc $(pkg-config --cflags alphamoe-router)
 * struct_layout.c */
#include <alphamoe/router_diagnostics.h>
#include <stddef.h>
#include <stdio.h>

#define SIZE(s) printf(#s " %zu\n", sizeof(s))
#define FIELD(s, f) printf(#s "." #f " %zu\n", offsetof(s, f))

int main(void) {
    SIZE(alphamoe_params);
    FIELD(alphamoe_params, struct_size);
    FIELD(alphamoe_params, num_experts);
    FIELD(alphamoe_params, top_k);
    FIELD(alphamoe_params, block_m);
    FIELD(alphamoe_params, max_tokens);
    FIELD(alphamoe_params, logits_row_stride);
    FIELD(alphamoe_params, flags);
    FIELD(alphamoe_params, force_specialization);

    SIZE(alphamoe_extent);
    FIELD(alphamoe_extent, elements);
    FIELD(alphamoe_extent, bytes);

    SIZE(alphamoe_sizes);
    FIELD(alphamoe_sizes, struct_size);
    FIELD(alphamoe_sizes, topk_ids);
    FIELD(alphamoe_sizes, topk_weights);
    FIELD(alphamoe_sizes, sorted_token_ids);
    FIELD(alphamoe_sizes, expert_ids);
    FIELD(alphamoe_sizes, num_tokens_post_padded);
    FIELD(alphamoe_sizes, expert_counts);
    FIELD(alphamoe_sizes, expert_offsets);
    FIELD(alphamoe_sizes, pair_to_sorted);
    FIELD(alphamoe_sizes, workspace);
    FIELD(alphamoe_sizes, workspace_alignment);

    SIZE(alphamoe_buffers);
    FIELD(alphamoe_buffers, struct_size);
    FIELD(alphamoe_buffers, topk_ids);
    FIELD(alphamoe_buffers, topk_weights);
    FIELD(alphamoe_buffers, sorted_token_ids);
    FIELD(alphamoe_buffers, expert_ids);
    FIELD(alphamoe_buffers, num_tokens_post_padded);
    FIELD(alphamoe_buffers, expert_counts);
    FIELD(alphamoe_buffers, expert_offsets);
    FIELD(alphamoe_buffers, pair_to_sorted);
    FIELD(alphamoe_buffers, sorted_token_ids_capacity);
    FIELD(alphamoe_buffers, expert_ids_capacity);
    FIELD(alphamoe_buffers, workspace);
    FIELD(alphamoe_buffers, workspace_bytes);

    SIZE(alphamoe_device_attributes);
    FIELD(alphamoe_device_attributes, struct_size);
    FIELD(alphamoe_device_attributes, compute_capability);
    FIELD(alphamoe_device_attributes, multiprocessor_count);
    FIELD(alphamoe_device_attributes, cooperative_ctas_per_sm);
    FIELD(alphamoe_device_attributes, cooperative_launch);

    SIZE(alphamoe_selection);
    FIELD(alphamoe_selection, struct_size);
    FIELD(alphamoe_selection, specialization);
    FIELD(alphamoe_selection, grid_ctas);
    FIELD(alphamoe_selection, block_threads);
    FIELD(alphamoe_selection, cooperative);
    FIELD(alphamoe_selection, image_arch);
    FIELD(alphamoe_selection, tokens_per_cta);
    return 0;
}
