/* bf16 and fp16 logits for the tests: encoding fp32 inputs into the narrow
 * types, and decoding written from the formats' definitions (sign,
 * exponent, fraction, scaled with ldexp), independent of the library's bit
 * manipulation. */
#ifndef ALPHAMOE_TEST_LOGITS_TYPES_H
#define ALPHAMOE_TEST_LOGITS_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "test_support.h"

/* The value a bf16 / IEEE binary16 bit pattern denotes, as fp32 (exact:
 * both formats are subsets of fp32). NaN patterns give a NaN of the same
 * sign. */
float bf16_value(uint16_t h);
float f16_value(uint16_t h);

/* Encodings toward zero (finite values too large for fp16 become
 * infinities, NaN stays NaN with its sign). Only used to build inputs. */
uint16_t bf16_from_float(float x);
uint16_t f16_from_float(float x);

/* Bytes of one logit of an alphamoe_logits_type. */
size_t logits_type_bytes(int32_t type);
const char *logits_type_name(int32_t type);

/* Logits of `type` for `n` fp32 inputs: a malloc'd array of n elements of
 * the type (fp32 copied as is), and in `values` the fp32 value of each
 * element as the contract says the router sees it. */
void *encode_logits(const float *in, int64_t n, int32_t type, float *values);

/* Like fill_logits, for a router of logits_type `type`: returns the typed
 * array (malloc'd, [M, stride]) and the fp32 values the router must see
 * in `values` ([M, stride]). LOGITS_RANDOM_BITS draws random 16-bit
 * patterns for the narrow types. */
void *fill_typed_logits(test_rng *rng, int32_t type, float *values, int32_t M, int32_t E, int64_t stride,
                        logit_pattern pattern, int32_t hot);

#endif
