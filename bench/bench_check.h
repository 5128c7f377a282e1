/*
 * The name alphamoe-bench gives itself in messages; the error checks it
 * shares with the other tools are in tools/common/tool.h: a failed CUDA or
 * router call is reported with the call's text and makes the caller
 * return -1, and the benchmark stops at the first one.
 */
#ifndef ALPHAMOE_BENCH_CHECK_H
#define ALPHAMOE_BENCH_CHECK_H

#include "tool.h"

#define BENCH_PROG "alphamoe-bench"

#endif
