/*
 * The inputs the tools make for a router: uniform random logits, rounded
 * to bf16 or fp16 for routers of those types, a correction bias and an
 * expert map. All of them reproducible from a seed.
 */
#ifndef ALPHAMOE_TOOLS_RANDOM_INPUTS_H
#define ALPHAMOE_TOOLS_RANDOM_INPUTS_H

#include <stddef.h>
#include <stdint.h>

uint64_t splitmix64(uint64_t *state);

/* n logits uniform in [-1, 1) from the seed. */
void uniform_logits(uint64_t seed, float *logits, size_t n);

/* Round to nearest even; NaN stays NaN, overflow becomes infinity. */
uint16_t float_to_bf16(float x);
uint16_t float_to_f16(float x);

/* Bytes of one logit of the type. */
size_t logits_type_size(int32_t type);

/* The logits in `type`: a malloc'd array of n elements (n fp32 values
 * rounded), or NULL when out of memory. For fp32 a copy. */
void *convert_logits(const float *values, size_t n, int32_t type);

/* Uniform in [-0.1, 0.1), from the generator state `state`: small enough
 * to steer between close scores. */
void random_bias(uint64_t state, float *bias, int32_t E);

/* `count` of the E experts chosen at random, local ids 0..count-1 in a
 * random order; -1 for the rest. */
void random_expert_map(uint64_t seed, int32_t *map, int32_t E, int32_t count);

/* Hash routing's inputs: M token ids uniform in [0, vocab), and a
 * [vocab, k] table of experts uniform in [0, E). */
void random_hash_inputs(uint64_t state, int32_t *token_ids, int32_t M, int32_t *table, int32_t vocab, int32_t k,
                        int32_t E);

#endif
