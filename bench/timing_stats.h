/*
 * How samples become a figure: each round of samples gives its median; the
 * figure is the median of the round medians, its spread the smallest and
 * largest round median.
 */
#ifndef ALPHAMOE_BENCH_TIMING_STATS_H
#define ALPHAMOE_BENCH_TIMING_STATS_H

#include <stdint.h>

typedef struct round_stats {
    double median_us;     /* median of the round medians */
    double spread_min_us; /* smallest round median */
    double spread_max_us; /* largest round median */
    double best_us;       /* smallest single sample */
    int32_t rounds;
    int32_t samples;      /* per round */
} round_stats;

/* Median of v[0..n) (n >= 1); reorders v. */
double median_of(double *v, int32_t n);

/* From round_medians[0..rounds) and the best sample seen. */
void stats_from_rounds(double *round_medians, int32_t rounds, int32_t samples, double best_us, round_stats *out);

#endif
