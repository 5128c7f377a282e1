/*
 * The state of one alphamoe-route run and the steps on it that need no GPU:
 * the logits (random or from a file), the router, the output buffers, the
 * host reference call and the timing summary.
 */
#ifndef ALPHAMOE_BENCH_ROUTE_SESSION_H
#define ALPHAMOE_BENCH_ROUTE_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "alphamoe/router_diagnostics.h"
#include "cli_options.h"
#include "output_set.h"

typedef struct session {
    options opt;
    float *logits;       /* host, [M, E], the fp32 values generated or read */
    void *typed_logits;  /* host, [M, E] in the router's logits_type: what is routed */
    size_t logit_bytes;  /* of one typed logit */
    float *bias;         /* host, [E]: the correction bias, when the flavour has one */
    int32_t *expert_map; /* host, [E]: the expert map, with --ep-map-random */
    alphamoe_router *router;
    alphamoe_params params; /* as the router normalized them */
    alphamoe_sizes sizes;
    output_set reference; /* alphamoe_route_host */
    output_set gpu;       /* alphamoe_route, copied back */
    double *samples;      /* per-call times, microseconds */
} session;

#define AMOE_CHECK(call)                                                                       \
    do {                                                                                       \
        const alphamoe_status status_ = (call);                                                \
        if (status_ != ALPHAMOE_OK) {                                                          \
            fprintf(stderr, PROG ": %s failed: %s\n", #call, alphamoe_status_string(status_)); \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

void session_release(session *s);
int64_t pair_count(const session *s);

/* Uniform in [-1, 1) from --seed. */
int random_logits(session *s);
/* Takes M and E from the file. Returns 0, EXIT_USAGE when the file
 * contradicts an explicit option, or 1 when it cannot be used. */
int load_input(session *s);
/* Parameters the library rejects are argument errors of this command. */
int create_router(session *s);
/* The routed logits in the router's type, the bias and the map. */
int make_flavour_inputs(session *s);
/* Experts of the plan (local experts under expert parallelism). */
int32_t plan_experts(const session *s);

int route_reference(session *s);

/* Sorts the samples (microseconds) and prints their median and minimum. */
void print_timing(double *samples, int32_t n, const char *what);

#endif
