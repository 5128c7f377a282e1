/*
 * The routing flavours alphamoe-bench times besides the default
 * renormalized fp32 softmax: each is a named set of the flavour fields of
 * alphamoe_params, the buffers it needs being made by the route fixture.
 */
#ifndef ALPHAMOE_BENCH_FLAVOURS_H
#define ALPHAMOE_BENCH_FLAVOURS_H

#include <stdint.h>

typedef struct bench_flavour {
    const char *suffix;        /* of the shape name; "" for the default */
    int32_t scoring;           /* alphamoe_scoring */
    int32_t logits_type;       /* alphamoe_logits_type */
    int32_t num_groups;
    int32_t topk_groups;
    float routed_scaling_factor;
    uint32_t flags;            /* ALPHAMOE_FLAG_NO_RENORMALIZE, _CORRECTION_BIAS */
    int32_t local_experts;     /* > 0: an expert map giving every (E / this)-th expert a local id */
} bench_flavour;

enum {
    FLAVOUR_DEFAULT,
    FLAVOUR_DEEPSEEK_V3, /* sigmoid, correction bias, 8 groups keep 4, scale 2.5 */
    FLAVOUR_KIMI_K2,     /* sigmoid, correction bias, one group, scale 2.827 */
    FLAVOUR_QWEN2_MOE,   /* softmax without renormalization */
    FLAVOUR_LLAMA4,      /* sigmoid, top-1, no renormalization */
    FLAVOUR_BF16,        /* bf16 logits */
    FLAVOUR_EXPERT_MAP,  /* expert parallelism: 64 local experts by map */
    FLAVOUR_F16,         /* IEEE binary16 logits */
    FLAVOUR_DEEPSEEK_V3_BF16, /* DeepSeek-V3's routing over bf16 logits */
    FLAVOUR_COUNT
};

const bench_flavour *bench_flavour_get(int32_t flavour);

#endif
