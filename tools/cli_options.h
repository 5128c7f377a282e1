/*
 * The command line of alphamoe-route: its options, the model preset they
 * start from (tools/common/presets.h), and the usage text shown for --help
 * and for every mistake.
 */
#ifndef ALPHAMOE_TOOLS_CLI_OPTIONS_H
#define ALPHAMOE_TOOLS_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "presets.h"
#include "tool.h"

#define PROG "alphamoe-route"

/* Flavour options: a negative value (or false *_given) keeps the preset's. */
typedef struct options {
    const model_preset *preset;
    bool preset_given;
    int32_t experts; /* 0: the preset's */
    int32_t top_k;   /* 0: the preset's */
    int32_t scoring;     /* -1: the preset's */
    int bias;            /* -1: the preset's, else 0 or 1 */
    const char *bias_file; /* --bias FILE.npy; NULL: a random bias where one is used */
    int renormalize;     /* -1: the preset's, else 0 or 1 */
    bool scale_given;    /* false: the preset's */
    float scale;
    int32_t groups;      /* -1: the preset's */
    int32_t topk_groups; /* -1: the preset's */
    int32_t logits_type; /* alphamoe_logits_type */
    bool dtype_given;
    bool ep_range;       /* --ep-range BEGIN:COUNT */
    int32_t ep_begin, ep_count;
    int32_t ep_map_count; /* local experts of the expert map; 0: none */
    bool ep_map_random;   /* --ep-map-random COUNT */
    const char *map_file; /* --expert-map FILE.npy */
    int32_t tokens;
    bool tokens_given;
    int32_t block_m;
    uint32_t flags;
    uint64_t seed;
    const char *input;
    const char *output;
    int32_t specialization;
    bool host;
    int32_t repeat; /* 0: the default of the path taken */
    int32_t device;
    bool device_given;
} options;

/* parse_args' answer to --version. */
#define PARSE_VERSION (-2)

void default_options(options *o);

/* Accepts "--name value" and "--name=value". Returns 0, PARSE_HELP,
 * PARSE_VERSION, or EXIT_USAGE after printing why. */
int parse_args(int argc, char **argv, options *o);

void print_usage(FILE *f);

/* "f32", "bf16" or "f16". */
const char *logits_type_name(int32_t type);

/* Prints the message and the usage text to stderr; returns EXIT_USAGE, so
 * that a caller can return its answer as the exit status. */
int usage_error(const char *fmt, ...) TOOL_PRINTF(1, 2);

/* Prints the message alone (an argument that is well formed but cannot
 * be used); returns EXIT_USAGE. */
int arg_error(const char *fmt, ...) TOOL_PRINTF(1, 2);

/* The router's parameters: the preset's, with the options over them. */
alphamoe_params options_params(const options *o);

/* Says which options gave the parameters p that alphamoe_router_create
 * refused with `status`, and what they must satisfy, in the command's
 * terms; returns EXIT_USAGE. */
int params_error(const options *o, const alphamoe_params *p, alphamoe_status status);

#endif
