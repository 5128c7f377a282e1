/* The soak tests' budget and random streams: a run lasts
 * ALPHAMOE_SOAK_SECONDS (default 180), reports its progress once a minute,
 * and draws each case from its own stream of the run's printed seed, so a
 * failure's case number and that seed replay it alone. */
#ifndef ALPHAMOE_TEST_SOAK_H
#define ALPHAMOE_TEST_SOAK_H

#include <stdint.h>
#include <time.h>

#include "test_support.h"

typedef struct soak_clock {
    struct timespec start;
    long budget_seconds;
    double last_report;
} soak_clock;

/* An integer from the environment; `fallback` where it is unset or empty. */
long soak_env_long(const char *name, long fallback);
/* Starts the clock with the ALPHAMOE_SOAK_SECONDS budget. */
void soak_start(soak_clock *clock);
double soak_elapsed(const soak_clock *clock);
/* Whether the budget has time left. */
int soak_running(const soak_clock *clock);
/* True once a minute: the caller prints its progress. */
int soak_report_due(soak_clock *clock);
/* The stream of case `case_number` (from 0) of a soak salted `salt`. */
void soak_case_rng(test_rng *rng, long case_number, uint64_t salt);

/* The soaks' random shapes: E of the models half the time, else any up to
 * ALPHAMOE_MAX_EXPERTS; k up to min(E, ALPHAMOE_MAX_TOP_K); block_m a power of two up to 256 half the
 * time, else any up to 256; M over the three specializations' ranges,
 * small ones more often; max_tokens M, or up to 2999 above it. */
int32_t soak_random_experts(test_rng *rng);
int32_t soak_random_top_k(test_rng *rng, int32_t E);
int32_t soak_random_block_m(test_rng *rng);
int32_t soak_random_tokens(test_rng *rng);
int32_t soak_random_max_tokens(test_rng *rng, int32_t M);

#endif
