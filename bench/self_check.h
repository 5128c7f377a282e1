/*
 * The GPU results of alphamoe-route against the library's host reference.
 */
#ifndef ALPHAMOE_BENCH_SELF_CHECK_H
#define ALPHAMOE_BENCH_SELF_CHECK_H

#include <stdbool.h>

#include "route_session.h"

/* Compares s->gpu with s->reference, prints the verdict and returns it. */
bool check_against_reference(const session *s);

#endif
