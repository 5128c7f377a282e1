/*
 * A benchmark of a wrong kernel is worthless: before a configuration is
 * timed, its GPU result is compared with the library's CPU reference.
 */
#ifndef ALPHAMOE_BENCH_ROUTE_CHECK_H
#define ALPHAMOE_BENCH_ROUTE_CHECK_H

#include "bench_device.h"
#include "cold_sampler.h"
#include "route_fixture.h"

/* Poisons f's device outputs, issues the work once (it must end with the
 * route call of f), then compares f's outputs with alphamoe_route_host run
 * on f's device logits as they stand afterwards: ids and plan bitwise up to
 * the live length, weights within the contract's 4e-6. Prints the first
 * difference and returns -1 when they differ. */
int verify_route(const route_fixture *f, bench_device *d, issue_fn issue, void *ctx, const char *label);

#endif
