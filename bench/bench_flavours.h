/*
 * The routing flavours alphamoe-bench times besides the default
 * renormalized fp32 softmax: a model preset's flavour (tools/common/
 * presets.h), a logits type, an expert map, redundant experts, or a preset
 * over another type.
 * The buffers a flavour needs are made by the benchmark's fixture.
 */
#ifndef ALPHAMOE_BENCH_FLAVOURS_H
#define ALPHAMOE_BENCH_FLAVOURS_H

#include <stdint.h>

#include "presets.h"

typedef struct bench_flavour {
    const char *suffix;          /* of the shape name; "" for the default */
    const model_preset *preset;  /* whose routing flavour it takes; NULL: softmax, renormalized */
    int32_t logits_type;         /* alphamoe_logits_type */
    int32_t local_experts;       /* > 0: an expert map giving every (E / this)-th expert a local id */
    int32_t redundant_experts;   /* > 0: this many physical experts past E, second replicas of the first
                                    experts (fixture_fill_inputs) */
} bench_flavour;

enum {
    FLAVOUR_DEFAULT,
    FLAVOUR_DEEPSEEK_V3,
    FLAVOUR_KIMI_K2,
    FLAVOUR_QWEN2_MOE,
    FLAVOUR_LLAMA4,
    FLAVOUR_BF16,        /* bf16 logits */
    FLAVOUR_EXPERT_MAP,  /* expert parallelism: 64 local experts by map */
    FLAVOUR_F16,         /* IEEE binary16 logits */
    FLAVOUR_DEEPSEEK_V3_BF16, /* DeepSeek-V3's routing over bf16 logits */
    FLAVOUR_QWEN2_MOE_BF16,   /* Qwen2-MoE's routing over bf16 logits (takes the shared expert) */
    FLAVOUR_DEEPSEEK_V4_PRO,  /* sqrt-softplus with a bias */
    FLAVOUR_DEEPSEEK_V4_PRO_BF16, /* the same over bf16 logits (its kernels' half_logits entry points) */
    FLAVOUR_KIMI_K3,          /* sigmoid with a bias over 896 experts, top-16: the wide kernels */
    FLAVOUR_DEEPSEEK_V4_HASH, /* hash routing by token id, sqrt-softplus weights */
    FLAVOUR_DEEPSEEK_V3_EPLB, /* DeepSeek-V3's routing with 32 redundant experts: the wide kernels */
    FLAVOUR_COUNT
};

const bench_flavour *bench_flavour_get(int32_t flavour);

/* Sets the flavour fields of p (scoring, flags, groups, scale, logits
 * type, expert map) to the flavour's. */
void bench_flavour_params(int32_t flavour, alphamoe_params *p);

#endif
