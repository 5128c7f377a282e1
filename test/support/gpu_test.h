/* What every GPU test program shares, whatever its cases look like: the
 * skip rule, the per-test random generator and the status check. */
#ifndef ALPHAMOE_TEST_GPU_TEST_H
#define ALPHAMOE_TEST_GPU_TEST_H

#include <stdint.h>

#include "test_support.h"

#define SKIP_RETURN_CODE 77
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

#define ROUTE_OK(call)                                                                  \
    do {                                                                                \
        const alphamoe_status st_ = (call);                                             \
        if (st_ != ALPHAMOE_OK) fail_msg("%s: %s", #call, alphamoe_status_string(st_)); \
    } while (0)

/* A generator of the run's seed and a salt of the test's own. */
test_rng case_rng(uint64_t salt);

/* 77 (skip) with a line saying why where the machine has no GPU (no CUDA
 * device, or no CUDA driver at all), 0 where it has one. Any other error
 * of the CUDA runtime ends the process with status 1 and a message: a
 * broken driver on a GPU machine is a failure, never a skip. */
int gpu_skip_without_device(void);

#endif
