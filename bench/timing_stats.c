#include "timing_stats.h"

#include <stdlib.h>

static int compare_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median_of(double *v, int32_t n) {
    qsort(v, (size_t)n, sizeof(double), compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void stats_from_rounds(double *round_medians, int32_t rounds, int32_t samples, double best_us, round_stats *out) {
    out->median_us = median_of(round_medians, rounds); /* sorts them */
    out->spread_min_us = round_medians[0];
    out->spread_max_us = round_medians[rounds - 1];
    out->best_us = best_us;
    out->rounds = rounds;
    out->samples = samples;
}
