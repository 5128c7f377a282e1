/*
 * The command line of alphamoe-bench and the sampling each mode uses when
 * the command line does not set it.
 */
#ifndef ALPHAMOE_BENCH_OPTIONS_H
#define ALPHAMOE_BENCH_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "shape_bench.h"
#include "tool.h"

typedef struct bench_options {
    const char *shapes;    /* NULL: all */
    const char *csv_path;  /* NULL: none */
    const char *json_path;
    const char *markdown_path;
    int32_t rounds;        /* 0: the mode's default */
    int32_t samples;
    int32_t warmup;        /* -1: the mode's default */
    int32_t graph_replays; /* 0: the mode's default */
    bool quick;
    bool sweep;
    bool entries;          /* every entry point that can run each shape */
    bool cold_code;        /* evict the instruction caches too */
    bool with_cold_code;   /* each shape also with the instruction caches evicted */
    bool list;
    int32_t device;
    int32_t arena_offset_kib; /* where the timed call's buffers start in the device arena */
    uint64_t seed;
} bench_options;

/* Returns 0, PARSE_HELP, or EXIT_USAGE after printing why. */
int parse_bench_args(int argc, char **argv, bench_options *o);

void print_bench_usage(FILE *f);

/* The sampling of this run: the options where given, else the mode's
 * defaults (full run 10 warm-up + 5 rounds x 30 samples, 10 graph replays;
 * sweep 3 + 3 x 10; --quick 2 + 2 x 5, 3 replays). */
shape_run_plan resolve_plan(const bench_options *o);

#endif
