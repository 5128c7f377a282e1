#include "random_inputs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alphamoe/router.h"

uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 24 random bits are exactly what a float holds. */
void uniform_logits(uint64_t seed, float *logits, size_t n) {
    uint64_t state = seed;
    for (size_t i = 0; i < n; ++i) logits[i] = (float)(splitmix64(&state) >> 40) * 0x1.0p-23f - 1.0f;
}

uint16_t float_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    if (isnan(x)) return (uint16_t)((u >> 16) | 0x40u);
    /* Adding half an ulp of the result, plus one when the kept part is
     * odd, rounds to nearest even by truncation. */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

uint16_t float_to_f16(float x) {
    const uint16_t sign = signbit(x) ? 0x8000u : 0u;
    if (isnan(x)) return sign | 0x7E00u;
    const float a = fabsf(x);
    if (a >= 65520.0f) return sign | 0x7C00u; /* rounds past the largest finite, 65504 */
    if (a < 0x1p-14f) {
        /* Subnormal: a multiple of 2^-24; nearbyint rounds to even. */
        return sign | (uint16_t)nearbyintf(a * 0x1p24f);
    }
    int e;
    const float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    /* 11 significant bits, rounded to even; a carry moves to the exponent. */
    const uint32_t significand = (uint32_t)nearbyintf(ldexpf(m, 11));
    const uint32_t bits = ((uint32_t)(e - 1 + 15) << 10) + (significand - 0x400u);
    return sign | (uint16_t)bits;
}

size_t logits_type_size(int32_t type) { return type == ALPHAMOE_LOGITS_F32 ? 4u : 2u; }

void *convert_logits(const float *values, size_t n, int32_t type) {
    void *out = malloc((n > 0 ? n : 1) * logits_type_size(type));
    if (out == NULL) return NULL;
    for (size_t i = 0; i < n; ++i) {
        if (type == ALPHAMOE_LOGITS_BF16) ((uint16_t *)out)[i] = float_to_bf16(values[i]);
        else if (type == ALPHAMOE_LOGITS_F16) ((uint16_t *)out)[i] = float_to_f16(values[i]);
        else ((float *)out)[i] = values[i];
    }
    return out;
}

void random_bias(uint64_t state, float *bias, int32_t E) {
    for (int32_t e = 0; e < E; ++e) bias[e] = ((float)(splitmix64(&state) >> 40) * 0x1.0p-23f - 1.0f) * 0.1f;
}

void random_expert_map(uint64_t seed, int32_t *map, int32_t E, int32_t count) {
    uint64_t state = seed ^ 0x3A93A93Aull;
    int32_t *order = malloc((size_t)E * sizeof(*order));
    for (int32_t e = 0; e < E; ++e) map[e] = -1;
    if (order == NULL) return;
    for (int32_t e = 0; e < E; ++e) order[e] = e;
    for (int32_t e = E - 1; e > 0; --e) {
        const int32_t j = (int32_t)(splitmix64(&state) % (uint64_t)(e + 1));
        const int32_t t = order[e];
        order[e] = order[j];
        order[j] = t;
    }
    for (int32_t l = 0; l < count && l < E; ++l) map[order[l]] = l;
    free(order);
}

void random_hash_inputs(uint64_t state, int32_t *token_ids, int32_t M, int32_t *table, int32_t vocab, int32_t k,
                        int32_t E) {
    for (int32_t t = 0; t < M; ++t) token_ids[t] = (int32_t)(splitmix64(&state) % (uint64_t)vocab);
    for (int64_t i = 0; i < (int64_t)vocab * k; ++i) table[i] = (int32_t)(splitmix64(&state) % (uint64_t)E);
}
