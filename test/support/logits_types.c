#include "logits_types.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static float decode(uint16_t h, int exponent_bits, int fraction_bits) {
    const int sign = (h >> 15) & 1;
    const int exponent = (h >> fraction_bits) & ((1 << exponent_bits) - 1);
    const int fraction = h & ((1 << fraction_bits) - 1);
    const int bias = (1 << (exponent_bits - 1)) - 1;
    double v;
    if (exponent == (1 << exponent_bits) - 1) v = fraction ? NAN : INFINITY;
    else if (exponent == 0) v = ldexp((double)fraction, 1 - bias - fraction_bits);
    else v = ldexp((double)((1 << fraction_bits) + fraction), exponent - bias - fraction_bits);
    return (float)(sign ? -v : v);
}

float bf16_value(uint16_t h) { return decode(h, 8, 7); }
float f16_value(uint16_t h) { return decode(h, 5, 10); }

uint16_t bf16_from_float(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint16_t h = (uint16_t)(u >> 16);
    /* A NaN whose payload sat in the dropped half would become infinity. */
    if (isnan(x) && (h & 0x7F) == 0) h |= 0x40;
    return h;
}

uint16_t f16_from_float(float x) {
    const uint16_t sign = signbit(x) ? 0x8000u : 0u;
    if (isnan(x)) return sign | 0x7E00u;
    const double a = fabs((double)x);
    if (a >= 65536.0) return sign | 0x7C00u; /* past the largest binade: infinity */
    if (a < ldexp(1.0, -14)) return sign | (uint16_t)floor(ldexp(a, 24)); /* subnormal, toward zero */
    int e;
    const double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    const int exponent = e - 1 + 15;
    const uint16_t fraction = (uint16_t)floor(ldexp(m * 2.0 - 1.0, 10));
    return sign | (uint16_t)(exponent << 10) | fraction;
}

size_t logits_type_bytes(int32_t type) { return type == ALPHAMOE_LOGITS_F32 ? 4u : 2u; }

const char *logits_type_name(int32_t type) {
    switch (type) {
    case ALPHAMOE_LOGITS_F32: return "f32";
    case ALPHAMOE_LOGITS_BF16: return "bf16";
    case ALPHAMOE_LOGITS_F16: return "f16";
    default: return "?";
    }
}

void *encode_logits(const float *in, int64_t n, int32_t type, float *values) {
    const int64_t count = n > 0 ? n : 1;
    void *out = malloc((size_t)count * logits_type_bytes(type));
    if (out == NULL) return NULL;
    for (int64_t i = 0; i < n; ++i) {
        if (type == ALPHAMOE_LOGITS_F32) {
            ((float *)out)[i] = in[i];
            values[i] = in[i];
        } else if (type == ALPHAMOE_LOGITS_BF16) {
            const uint16_t h = bf16_from_float(in[i]);
            ((uint16_t *)out)[i] = h;
            values[i] = bf16_value(h);
        } else {
            const uint16_t h = f16_from_float(in[i]);
            ((uint16_t *)out)[i] = h;
            values[i] = f16_value(h);
        }
    }
    return out;
}

void *fill_typed_logits(test_rng *rng, int32_t type, float *values, int32_t M, int32_t E, int64_t stride,
                        logit_pattern pattern, int32_t hot) {
    const int64_t n = (int64_t)(M > 0 ? M : 1) * stride;
    float *f32 = malloc((size_t)n * sizeof *f32);
    if (f32 == NULL) return NULL;
    fill_logits(rng, f32, M, E, stride, pattern, hot);
    void *typed = encode_logits(f32, n, type, values);
    if (typed && type != ALPHAMOE_LOGITS_F32 && pattern == LOGITS_RANDOM_BITS) {
        uint16_t *h = typed;
        for (int32_t t = 0; t < M; ++t)
            for (int32_t e = 0; e < E; ++e) {
                const int64_t i = (int64_t)t * stride + e;
                h[i] = (uint16_t)rng_next(rng);
                values[i] = type == ALPHAMOE_LOGITS_BF16 ? bf16_value(h[i]) : f16_value(h[i]);
            }
    }
    free(f32);
    return typed;
}
