/*
 * Machine-readable results: --csv writes one flat table (a row per floor,
 * shape, dependent-launch figure or sweep point, told apart by the first
 * column, `kind`); --json writes the same as one document.
 */
#ifndef ALPHAMOE_BENCH_EXPORT_H
#define ALPHAMOE_BENCH_EXPORT_H

#include "bench_run.h"

int write_csv(const bench_run *run, const char *path);
int write_json(const bench_run *run, const char *path);

#endif
