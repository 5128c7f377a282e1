#include "logit_classes.h"

#include <float.h>
#include <math.h>

const char *logit_row_class_name(logit_row_class c) {
    switch (c) {
    case ROW_ALL_NAN: return "all-nan";
    case ROW_ALL_POS_INF: return "all-+inf";
    case ROW_ALL_NEG_INF: return "all--inf";
    case ROW_MIXED_INF: return "mixed-inf";
    case ROW_INF_AND_NAN: return "inf-and-nan";
    case ROW_DENORMALS: return "denormals";
    case ROW_SIGNED_ZEROS: return "signed-zeros";
    case ROW_NAN_AND_NUMBERS: return "nan-and-numbers";
    case ROW_EXTREMES: return "extremes";
    case ROW_ONE_POS_INF: return "one-+inf";
    case ROW_SOME_POS_INF: return "some-+inf";
    case ROW_EVERY_CLASS_BITS: return "every-class-bits";
    case ROW_RANDOM_BITS: return "random-bits";
    default: return "?";
    }
}

uint32_t random_bits_of_class(test_rng *rng, int value_class) {
    const uint32_t sign = rng_below(rng, 2) ? 0x80000000u : 0u;
    const uint32_t mantissa = (uint32_t)rng_next(rng) & 0x7FFFFFu;
    switch (value_class) {
    case 0: return sign;
    case 1: return sign | (mantissa ? mantissa : 1u);
    case 2: return sign | ((1u + rng_below(rng, 254)) << 23) | mantissa;
    case 3: return sign | 0x7F800000u;
    case 4: return sign | 0x7FC00000u | (mantissa & 0x3FFFFFu);
    default: return sign | 0x7F800000u | (1u + rng_below(rng, 0x3FFFFFu)); /* quiet bit clear, payload != 0 */
    }
}

static float class_value(test_rng *rng, int value_class) { return bits_to_float(random_bits_of_class(rng, value_class)); }

static float random_nan(test_rng *rng) { return class_value(rng, 4 + (int)rng_below(rng, 2)); }

void fill_row_of_class(test_rng *rng, float *row, int32_t E, logit_row_class c) {
    const int32_t special = (int32_t)rng_below(rng, (uint32_t)E);
    for (int32_t e = 0; e < E; ++e) {
        float v;
        switch (c) {
        case ROW_ALL_NAN: v = random_nan(rng); break;
        case ROW_ALL_POS_INF: v = INFINITY; break;
        case ROW_ALL_NEG_INF: v = -INFINITY; break;
        case ROW_MIXED_INF: v = rng_below(rng, 2) ? INFINITY : -INFINITY; break;
        case ROW_INF_AND_NAN: v = rng_below(rng, 3) == 0 ? random_nan(rng) : class_value(rng, 3); break;
        case ROW_DENORMALS: v = class_value(rng, 1); break;
        case ROW_SIGNED_ZEROS: v = rng_below(rng, 2) ? -0.0f : 0.0f; break;
        case ROW_NAN_AND_NUMBERS: v = rng_below(rng, 8) ? random_nan(rng) : rng_uniform(rng, -4.0f, 4.0f); break;
        case ROW_EXTREMES: {
            static const float extremes[] = {FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1.0f, -1.0f};
            v = extremes[rng_below(rng, 6)];
            break;
        }
        case ROW_ONE_POS_INF: v = e == special ? INFINITY : rng_uniform(rng, -8.0f, 8.0f); break;
        case ROW_SOME_POS_INF: {
            const uint32_t r = rng_below(rng, 4);
            v = r == 0 ? INFINITY : r == 1 ? random_nan(rng) : rng_uniform(rng, -8.0f, 8.0f);
            break;
        }
        case ROW_EVERY_CLASS_BITS: v = class_value(rng, (int)rng_below(rng, 6)); break;
        default: v = bits_to_float((uint32_t)rng_next(rng)); break;
        }
        row[e] = v;
    }
}
