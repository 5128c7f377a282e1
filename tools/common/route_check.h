/*
 * GPU results against the library's CPU reference, alphamoe_route_host,
 * as the contract relates them: ids and plan bitwise, weights within its
 * tolerance. A benchmark of a wrong kernel is worthless, and the CLI
 * shows what it checked.
 */
#ifndef ALPHAMOE_TOOLS_ROUTE_CHECK_H
#define ALPHAMOE_TOOLS_ROUTE_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "outputs.h"
#include "route_fixture.h"

typedef struct route_diff {
    bool ids_equal;          /* ids and plan bitwise equal */
    bool weights_equal;      /* every weight within weight_tolerance */
    double max_weight_diff;  /* largest |weight - reference weight|; a NaN sticks */
    double weight_tolerance;
    char first[256];         /* the first difference found, "" when none */
} route_diff;

/* The contract's 4e-6, times the routed scaling factor when it exceeds 1. */
double weight_tolerance(const alphamoe_params *p);

/* Compares `got` with `want`, alphamoe_route_host's outputs for the same
 * `tokens` tokens of a router of parameters p and sizes z: the ids and the
 * plan where the contract writes them (up to the live length, or the
 * capacity with tail fill), the optional outputs both sets hold, and the
 * weights. */
void route_compare(const alphamoe_params *p, const alphamoe_sizes *z, int32_t tokens, const output_set *want,
                   const output_set *got, route_diff *d);

/* Poisons f's device outputs, issues the work once on the stream (it must
 * end with f's route call), copies the outputs into `got` and the device
 * logits back, runs alphamoe_route_host on those logits into `want` and
 * compares. got and want come from fixture_host_outputs. Returns -1 when
 * a call fails (said on stderr), else 0 with the verdict in d. */
int fixture_check(const route_fixture *f, cudaStream_t stream, issue_fn issue, void *ctx, output_set *got,
                  output_set *want, route_diff *d);

#endif
