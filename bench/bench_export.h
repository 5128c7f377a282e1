/*
 * Machine-readable results: --csv writes one flat table (a row per floor,
 * shape, dependent-launch figure or sweep point, told apart by the first
 * column, `kind`); --json writes the same as one document.
 */
#ifndef ALPHAMOE_BENCH_EXPORT_H
#define ALPHAMOE_BENCH_EXPORT_H

#include "bench_run.h"

#include <stdio.h>

int write_csv(const bench_run *run, const char *path);
int write_json(const bench_run *run, const char *path);

/* The file to write, or NULL after saying why; the check of every write
 * and the close, -1 after saying it failed. */
FILE *open_output(const char *path);
int close_output(FILE *f, const char *path);

#endif
