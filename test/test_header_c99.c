/* The public header as a C99 user sees it: no CUDA headers, strict
 * pedantic C99, and the compiled-in version matching the library's. A
 * router reads back the parameters it was made from (normalized as
 * alphamoe_router_get_params says), and a caller of the first version,
 * which knew only the fields up to force_specialization, or of version
 * 0.2, which knew them up to reserved, creates the same router as a caller
 * of this version passing zeros after them. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "alphamoe/router_diagnostics.h"

/* The router's parameters, read back into a struct of this version. */
static int params_of(const alphamoe_router *router, alphamoe_params *out) {
    memset(out, 0x6C, sizeof *out);
    out->struct_size = sizeof *out;
    return alphamoe_router_get_params(router, out) == ALPHAMOE_OK;
}

static int same_params(const char *what, const alphamoe_params *got, const alphamoe_params *want) {
    if (memcmp(got, want, sizeof *got) == 0) return 1;
    fprintf(stderr,
            "%s: read back E %d k %d block_m %d max %d stride %ld flags 0x%x spec %d scoring %d type %d groups %d/%d "
            "scale %g local %d+%d reserved %u, want E %d k %d block_m %d max %d stride %ld flags 0x%x spec %d "
            "scoring %d type %d groups %d/%d scale %g local %d+%d reserved %u\n",
            what, got->num_experts, got->top_k, got->block_m, got->max_tokens, (long)got->logits_row_stride,
            got->flags, got->force_specialization, got->scoring, got->logits_type, got->num_groups,
            got->topk_groups, (double)got->routed_scaling_factor, got->local_expert_begin,
            got->local_expert_count, got->reserved, want->num_experts, want->top_k, want->block_m,
            want->max_tokens, (long)want->logits_row_stride, want->flags, want->force_specialization,
            want->scoring, want->logits_type, want->num_groups, want->topk_groups,
            (double)want->routed_scaling_factor, want->local_expert_begin, want->local_expert_count,
            want->reserved);
    return 0;
}

int main(void) {
    alphamoe_params params = {sizeof(alphamoe_params), 8, 2, 16, 64, 0, 0, ALPHAMOE_SPECIALIZATION_AUTO,
                              ALPHAMOE_SCORING_SIGMOID, ALPHAMOE_LOGITS_BF16, 2, 1, 2.5f, 0, 0, 0, 0, 0, 0, 0};
    alphamoe_router *router = NULL;
    alphamoe_params got;
    struct CUstream_st *stream = NULL; /* what cudaStream_t and CUstream are */
    (void)stream;
    if (alphamoe_version_number() != ALPHAMOE_VERSION_NUMBER) {
        fprintf(stderr, "header version %d, library version %u\n", ALPHAMOE_VERSION_NUMBER,
                (unsigned)alphamoe_version_number());
        return 1;
    }
    if (alphamoe_router_create(&params, &router) != ALPHAMOE_OK || !params_of(router, &got)) return 1;
    alphamoe_router_destroy(router);
    {
        /* Normalized: the row stride resolved to E, local_expert_count 0 to
         * all E experts; the rest as given. */
        alphamoe_params want = params;
        want.logits_row_stride = 8;
        want.local_expert_count = 8;
        if (!same_params("this version's struct", &got, &want)) return 1;
    }

    /* Version 0.2's struct: nothing past reserved, whatever the memory
     * after it holds. */
    {
        alphamoe_params older = params, newer = params;
        older.struct_size = offsetof(alphamoe_params, vocab_size);
        older.vocab_size = -7; /* past struct_size: never read */
        older.num_physical_experts = -1;
        older.replica_slots = 3;
        older.reserved2 = 0x55u;
        newer.vocab_size = 0;
        newer.num_physical_experts = 0;
        newer.replica_slots = 0;
        newer.reserved2 = 0;
        alphamoe_params got_older, got_newer;
        if (alphamoe_router_create(&older, &router) != ALPHAMOE_OK || !params_of(router, &got_older)) return 1;
        alphamoe_router_destroy(router);
        if (alphamoe_router_create(&newer, &router) != ALPHAMOE_OK || !params_of(router, &got_newer)) return 1;
        alphamoe_router_destroy(router);
        if (!same_params("version 0.2's struct against this version's with zeros", &got_older, &got_newer)) return 1;
    }

    /* The first version's struct: nothing past force_specialization. */
    params.struct_size = offsetof(alphamoe_params, scoring);
    params.scoring = -1; /* past struct_size: never read */
    if (alphamoe_router_create(&params, &router) != ALPHAMOE_OK || !params_of(router, &got)) return 1;
    alphamoe_router_destroy(router);
    {
        alphamoe_params newer;
        alphamoe_params want;
        memset(&newer, 0, sizeof newer);
        memcpy(&newer, &params, offsetof(alphamoe_params, scoring));
        newer.struct_size = sizeof newer;
        if (alphamoe_router_create(&newer, &router) != ALPHAMOE_OK || !params_of(router, &want)) return 1;
        alphamoe_router_destroy(router);
        if (!same_params("the first version's struct against this version's with zeros", &got, &want)) return 1;
        /* And that router is the first version's routing: softmax of fp32
         * logits, no groups, scale 1, every expert local. */
        if (want.scoring != ALPHAMOE_SCORING_SOFTMAX || want.logits_type != ALPHAMOE_LOGITS_F32 ||
            want.num_groups != 1 || want.topk_groups != 1 || want.routed_scaling_factor != 1.0f ||
            want.local_expert_begin != 0 || want.local_expert_count != 8 || want.num_experts != 8 ||
            want.top_k != 2 || want.block_m != 16 || want.max_tokens != 64 || want.logits_row_stride != 8) {
            fprintf(stderr, "the first version's struct does not read as the first version's routing\n");
            return 1;
        }
    }
    return 0;
}
