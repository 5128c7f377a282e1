/* The public header as a C99 user sees it: no CUDA headers, strict
 * pedantic C99, and the compiled-in version matching the library's. A
 * caller of the first version, which knew only the fields up to
 * force_specialization, still creates the same router. */
#include <stddef.h>
#include <stdio.h>

#include "alphamoe/router_diagnostics.h"

int main(void) {
    alphamoe_params params = {sizeof(alphamoe_params), 8, 2, 16, 64, 0, 0, ALPHAMOE_SPECIALIZATION_AUTO,
                              ALPHAMOE_SCORING_SIGMOID, ALPHAMOE_LOGITS_BF16, 2, 1, 2.5f, 0, 0, 0};
    alphamoe_router *router = NULL;
    struct CUstream_st *stream = NULL; /* what cudaStream_t and CUstream are */
    (void)stream;
    if (alphamoe_version_number() != ALPHAMOE_VERSION_NUMBER) {
        fprintf(stderr, "header version %d, library version %u\n", ALPHAMOE_VERSION_NUMBER,
                (unsigned)alphamoe_version_number());
        return 1;
    }
    if (alphamoe_router_create(&params, &router) != ALPHAMOE_OK) return 1;
    alphamoe_router_destroy(router);

    /* The first version's struct: nothing past force_specialization. */
    params.struct_size = offsetof(alphamoe_params, scoring);
    params.scoring = -1; /* past struct_size: never read */
    if (alphamoe_router_create(&params, &router) != ALPHAMOE_OK) return 1;
    alphamoe_router_destroy(router);
    return 0;
}
