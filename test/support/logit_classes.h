/* Rows of logits built from one class of IEEE-754 bit patterns each: whole
 * rows of NaN, of +inf, of -inf, of denormals, of signed zeros, mixtures,
 * and arbitrary bits drawn so that every class (zero, denormal, normal,
 * infinity, quiet and signalling NaN, both signs) shows up. The contract
 * must hold on every one of them: k distinct valid ids, a valid plan,
 * weights finite in [0, 1]. */
#ifndef ALPHAMOE_TEST_LOGIT_CLASSES_H
#define ALPHAMOE_TEST_LOGIT_CLASSES_H

#include <stdint.h>

#include "test_support.h"

typedef enum logit_row_class {
    ROW_ALL_NAN,          /* quiet and signalling NaNs of both signs, varied payloads */
    ROW_ALL_POS_INF,
    ROW_ALL_NEG_INF,
    ROW_MIXED_INF,        /* +inf and -inf only */
    ROW_INF_AND_NAN,      /* +-inf and NaN, no number */
    ROW_DENORMALS,        /* denormals of both signs only */
    ROW_SIGNED_ZEROS,     /* -0.0 and +0.0 only: every logit ties */
    ROW_NAN_AND_NUMBERS,  /* mostly NaN, a few numbers */
    ROW_EXTREMES,         /* +-FLT_MAX, +-smallest normal, +-1 */
    ROW_ONE_POS_INF,      /* one +inf among numbers */
    ROW_SOME_POS_INF,     /* several +inf among NaN and numbers */
    ROW_EVERY_CLASS_BITS, /* each element's bits drawn from a random class */
    ROW_RANDOM_BITS,      /* uniform 32-bit patterns */
    ROW_CLASS_COUNT
} logit_row_class;

const char *logit_row_class_name(logit_row_class c);

/* 32-bit pattern of a random value of one class: 0 zero, 1 denormal,
 * 2 normal, 3 infinity, 4 quiet NaN, 5 signalling NaN; random sign. */
uint32_t random_bits_of_class(test_rng *rng, int value_class);

/* Fills row[0..E) with values of class c. */
void fill_row_of_class(test_rng *rng, float *row, int32_t E, logit_row_class c);

#endif
