#include "route_fixture.h"

#include <stdlib.h>
#include <string.h>

#include "random_inputs.h"
#include "tool.h"

int64_t fixture_logits_count(const route_fixture *f) { return (int64_t)f->tokens * f->params.num_experts; }

static size_t hash_table_count(const route_fixture *f) {
    return (size_t)f->params.vocab_size * (size_t)f->params.top_k;
}

/* The replica table [E, R] followed by the replica counts [E]. */
static size_t replica_words(const route_fixture *f) {
    return (size_t)f->params.num_experts * ((size_t)f->params.replica_slots + 1);
}

int64_t fixture_logits_bytes(const route_fixture *f) {
    return fixture_logits_count(f) * (int64_t)logits_type_size(f->params.logits_type);
}

alphamoe_status fixture_router(route_fixture *f, const alphamoe_params *p, int32_t tokens) {
    memset(f, 0, sizeof(*f));
    f->tokens = tokens;
    alphamoe_status st = alphamoe_router_create(p, &f->router);
    if (st != ALPHAMOE_OK) return st;
    f->params.struct_size = sizeof(f->params);
    f->sizes.struct_size = sizeof(f->sizes);
    st = alphamoe_router_get_params(f->router, &f->params);
    if (st == ALPHAMOE_OK) st = alphamoe_router_sizes(f->router, &f->sizes);
    if (st != ALPHAMOE_OK) return st;
    const size_t E = (size_t)f->params.num_experts;
    if (f->params.flags & ALPHAMOE_FLAG_CORRECTION_BIAS) f->host_bias = calloc(E, sizeof(*f->host_bias));
    if (f->params.flags & ALPHAMOE_FLAG_EXPERT_MAP) f->host_map = calloc(E, sizeof(*f->host_map));
    const bool hashed = (f->params.flags & ALPHAMOE_FLAG_HASH_ROUTING) != 0;
    if (hashed) {
        f->host_token_ids = calloc(tokens > 0 ? (size_t)tokens : 1, sizeof(int32_t));
        f->host_hash_table = calloc(hash_table_count(f), sizeof(int32_t));
    }
    const bool replicas = (f->params.flags & ALPHAMOE_FLAG_REDUNDANT_EXPERTS) != 0;
    if (replicas) f->host_replicas = calloc(replica_words(f), sizeof(int32_t));
    const bool missing = (replicas && f->host_replicas == NULL) ||
                         ((f->params.flags & ALPHAMOE_FLAG_CORRECTION_BIAS) && f->host_bias == NULL) ||
                         ((f->params.flags & ALPHAMOE_FLAG_EXPERT_MAP) && f->host_map == NULL) ||
                         (hashed && (f->host_token_ids == NULL || f->host_hash_table == NULL));
    return missing ? ALPHAMOE_ERROR_OUT_OF_MEMORY : ALPHAMOE_OK;
}

void fixture_fill_inputs(route_fixture *f, uint64_t seed) {
    if (f->host_bias) random_bias(seed, f->host_bias, f->params.num_experts);
    if (f->host_token_ids)
        random_hash_inputs(seed ^ 0x4A54ull, f->host_token_ids, f->tokens, f->host_hash_table, f->params.vocab_size,
                           f->params.top_k, f->params.num_experts);
    if (f->host_replicas) {
        const int32_t E = f->params.num_experts, R = f->params.replica_slots, P = f->params.num_physical_experts;
        int32_t *table = f->host_replicas, *count = f->host_replicas + (size_t)E * R;
        for (int32_t e = 0; e < E; ++e) {
            count[e] = 0;
            for (int32_t q = e; q < P && count[e] < R; q += E) table[(size_t)e * R + count[e]++] = q;
        }
    }
}

/* Buffers over the output set s and the flavour's inputs as `in` holds them
 * (host or device): the replica counts follow the replica table. */
static alphamoe_buffers buffers_with_inputs(const route_fixture *f, const output_set *s, void *workspace,
                                            size_t workspace_bytes, const alphamoe_buffers *in) {
    alphamoe_buffers b = buffers_for(s, &f->sizes, workspace, workspace_bytes, in->correction_bias, in->expert_map);
    b.token_ids = in->token_ids;
    b.hash_table = in->hash_table;
    if (in->logical_to_physical) {
        b.logical_to_physical = in->logical_to_physical;
        b.replica_count = in->logical_to_physical + (size_t)f->params.num_experts * (size_t)f->params.replica_slots;
    }
    return b;
}

alphamoe_buffers fixture_host_buffers(const route_fixture *f, const output_set *s) {
    alphamoe_buffers in;
    memset(&in, 0, sizeof(in));
    in.correction_bias = f->host_bias;
    in.expert_map = f->host_map;
    in.token_ids = f->host_token_ids;
    in.hash_table = f->host_hash_table;
    in.logical_to_physical = f->host_replicas;
    return buffers_with_inputs(f, s, NULL, 0, &in);
}

/* The buffers of fixture_alloc in the order it takes them. */
typedef struct device_buffer {
    void **ptr;
    size_t bytes;
    const char *what;
    const void *upload; /* host data copied in, or NULL */
} device_buffer;

/* The logits, the outputs, the workspace, the bias, the map, the token
 * ids, the table and the replica tables. */
#define FIXTURE_BUFFERS (OUTPUT_COUNT + 7)

static int fixture_buffers(route_fixture *f, output_set *out, unsigned optional, device_buffer list[FIXTURE_BUFFERS]) {
    const size_t E = (size_t)f->params.num_experts;
    int n = 0;
    list[n++] = (device_buffer){&f->logits, alloc_bytes(fixture_logits_bytes(f)), "the logits", NULL};
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(out, &f->sizes, 0, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i)
        if (output_in_set(i, optional)) list[n++] = (device_buffer){slots[i].ptr, slots[i].bytes, slots[i].name, NULL};
    list[n++] = (device_buffer){&f->buffers.workspace, alloc_bytes(f->sizes.workspace.bytes), "the workspace", NULL};
    if (f->host_bias) list[n++] = (device_buffer){(void **)&f->buffers.correction_bias, E * sizeof(float),
                                                  "the correction bias", f->host_bias};
    if (f->host_map) list[n++] = (device_buffer){(void **)&f->buffers.expert_map, E * sizeof(int32_t),
                                                 "the expert map", f->host_map};
    if (f->host_token_ids) {
        list[n++] = (device_buffer){(void **)&f->buffers.token_ids, alloc_bytes((int64_t)f->tokens * 4),
                                    "the token ids", f->host_token_ids};
        list[n++] = (device_buffer){(void **)&f->buffers.hash_table, hash_table_count(f) * sizeof(int32_t),
                                    "the hash table", f->host_hash_table};
    }
    if (f->host_replicas)
        list[n++] = (device_buffer){(void **)&f->buffers.logical_to_physical, replica_words(f) * sizeof(int32_t),
                                    "the replica tables", f->host_replicas};
    return n;
}

size_t fixture_device_bytes(const route_fixture *f, unsigned optional) {
    route_fixture copy = *f;
    output_set out;
    device_buffer list[FIXTURE_BUFFERS];
    const int n = fixture_buffers(&copy, &out, optional, list);
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += (list[i].bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    return total;
}

int fixture_alloc(route_fixture *f, device_arena *a, unsigned optional) {
    if (arena_in_use(a)) {
        fprintf(stderr, "%s: a route fixture already holds the device arena\n", tool_prog);
        return -1;
    }
    f->arena = a;
    f->optional = optional;
    output_set out;
    memset(&out, 0, sizeof(out));
    device_buffer list[FIXTURE_BUFFERS];
    const int n = fixture_buffers(f, &out, optional, list);
    for (int i = 0; i < n; ++i) {
        /* The arena's alignment covers every buffer's, the workspace's too. */
        if ((*list[i].ptr = arena_take(a, list[i].bytes, list[i].what)) == NULL) return -1;
        if (list[i].upload) CUDA_TRY(cudaMemcpy(*list[i].ptr, list[i].upload, list[i].bytes, cudaMemcpyHostToDevice));
    }
    const alphamoe_buffers inputs = f->buffers; /* the device inputs fixture_buffers took */
    void *workspace = f->buffers.workspace;
    f->buffers = buffers_with_inputs(f, &out, workspace, alloc_bytes(f->sizes.workspace.bytes), &inputs);
    CUDA_TRY(cudaMemset(workspace, 0, f->buffers.workspace_bytes)); /* once, as the contract asks */
    CUDA_TRY(cudaDeviceSynchronize());
    return 0;
}

int fixture_upload_logits(route_fixture *f, const void *typed) {
    CUDA_TRY(cudaMemcpy(f->logits, typed, (size_t)fixture_logits_bytes(f), cudaMemcpyHostToDevice));
    /* From pageable memory cudaMemcpy may return before the copy lands. */
    CUDA_TRY(cudaDeviceSynchronize());
    return 0;
}

int fixture_host_outputs(const route_fixture *f, output_set *s) {
    if (host_outputs_alloc(s, &f->sizes, f->optional, 0) == 0) return 0;
    fprintf(stderr, "%s: out of host memory for the route outputs\n", tool_prog);
    return -1;
}

int issue_route(void *ctx, cudaStream_t stream) {
    const route_fixture *f = ctx;
    ROUTER_TRY(alphamoe_route(f->router, f->tokens, f->logits, &f->buffers, stream));
    return 0;
}

void fixture_destroy(route_fixture *f) {
    /* Teardown failures cannot change a result any more: ignored. */
    if (f->arena) arena_release_all(f->arena);
    alphamoe_router_destroy(f->router);
    free(f->host_bias);
    free(f->host_map);
    free(f->host_token_ids);
    free(f->host_hash_table);
    free(f->host_replicas);
    memset(f, 0, sizeof(*f));
}
