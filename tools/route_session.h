/*
 * The state of one alphamoe-route run and the steps on it that need no GPU:
 * the logits (random or from a file), the router and its inputs (a route
 * fixture, tools/common/route_fixture.h), the host reference call and the
 * timing summary.
 */
#ifndef ALPHAMOE_TOOLS_ROUTE_SESSION_H
#define ALPHAMOE_TOOLS_ROUTE_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "alphamoe/router_diagnostics.h"
#include "cli_options.h"
#include "outputs.h"
#include "route_fixture.h"

/* The optional outputs the tool shows: the load report reads the counts. */
#define SESSION_OUTPUTS (OUTPUT_EXPERT_COUNTS | OUTPUT_EXPERT_OFFSETS)

typedef struct session {
    options opt;
    float *logits;        /* host, [M, E], the random fp32 values; NULL with --input */
    void *typed_logits;   /* host, [M, E] in the router's logits_type: what is routed */
    float *file_bias;     /* [E] from --bias FILE.npy, or NULL */
    int32_t *file_map;    /* [E] from --expert-map FILE.npy, or NULL */
    route_fixture route;  /* the router, its parameters as normalized, sizes, bias and map */
    device_arena arena;   /* the fixture's device buffers, on the GPU path */
    output_set reference; /* alphamoe_route_host */
    output_set gpu;       /* alphamoe_route, copied back */
    double *samples;      /* per-call times, microseconds */
} session;

void session_release(session *s);

/* Takes M, E and the logits type from the file. Returns 0, EXIT_USAGE
 * when the file contradicts an option (--dtype, --experts, --tokens, the
 * preset's experts), or 1 when it cannot be used. */
int load_input(session *s);
/* Reads and checks --bias and --expert-map files against the experts of
 * the options; the map sets the number of local experts. Returns 0 or
 * EXIT_USAGE. */
int load_bias_and_map(session *s);
/* Parameters the library rejects are argument errors of this command. */
int create_router(session *s);
/* Uniform logits in [-1, 1) from --seed unless read from a file, the
 * logits in the router's type, the bias and the map (from their files,
 * else random from --seed). */
int make_inputs(session *s);
/* Experts of the plan (local experts under expert parallelism). */
int32_t plan_experts(const session *s);

int route_reference(session *s);

/* Sorts the samples (microseconds) and prints their median and minimum. */
void print_timing(double *samples, int32_t n, const char *what);

#endif
