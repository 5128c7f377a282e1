#include "soak.h"

#include <stdlib.h>

long soak_env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : fallback;
}

void soak_start(soak_clock *clock) {
    clock_gettime(CLOCK_MONOTONIC, &clock->start);
    clock->budget_seconds = soak_env_long("ALPHAMOE_SOAK_SECONDS", 180);
    clock->last_report = 0.0;
}

double soak_elapsed(const soak_clock *clock) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - clock->start.tv_sec) + 1e-9 * (double)(now.tv_nsec - clock->start.tv_nsec);
}

int soak_running(const soak_clock *clock) { return soak_elapsed(clock) < (double)clock->budget_seconds; }

int soak_report_due(soak_clock *clock) {
    const double now = soak_elapsed(clock);
    if (now - clock->last_report < 60.0) return 0;
    clock->last_report = now;
    return 1;
}

int32_t soak_random_experts(test_rng *rng) {
    static const int32_t models[] = {8, 16, 60, 64, 128, 160, 256, 384, 512, 896, 2048};
    return rng_below(rng, 2) ? models[rng_below(rng, sizeof models / sizeof models[0])]
                             : 1 + (int32_t)rng_below(rng, ALPHAMOE_MAX_EXPERTS);
}

int32_t soak_random_top_k(test_rng *rng, int32_t E) {
    return 1 + (int32_t)rng_below(rng, (uint32_t)(E < ALPHAMOE_MAX_TOP_K ? E : ALPHAMOE_MAX_TOP_K));
}

int32_t soak_random_block_m(test_rng *rng) {
    return rng_below(rng, 2) ? (int32_t)(1u << rng_below(rng, 9)) : 1 + (int32_t)rng_below(rng, 256);
}

int32_t soak_random_tokens(test_rng *rng) {
    switch (rng_below(rng, 4)) {
    case 0: return (int32_t)rng_below(rng, 17);
    case 1: return 17 + (int32_t)rng_below(rng, 496);
    case 2: return 513 + (int32_t)rng_below(rng, 4000);
    default: return (int32_t)rng_below(rng, 20000);
    }
}

int32_t soak_random_max_tokens(test_rng *rng, int32_t M) {
    return M + (rng_below(rng, 2) ? (int32_t)rng_below(rng, 3000) : 0);
}

void soak_case_rng(test_rng *rng, long case_number, uint64_t salt) {
    rng_seed(rng, (test_base_seed() ^ salt) ^ ((uint64_t)(case_number + 1) * 0xD1B54A32D192ED03ull));
}
