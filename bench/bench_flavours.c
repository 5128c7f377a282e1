#include "bench_flavours.h"

#include "alphamoe/router.h"

static const bench_flavour kFlavours[FLAVOUR_COUNT] = {
    [FLAVOUR_DEFAULT] = {"", ALPHAMOE_SCORING_SOFTMAX, ALPHAMOE_LOGITS_F32, 0, 0, 0.0f, 0u, 0},
    [FLAVOUR_DEEPSEEK_V3] = {"-deepseek-v3", ALPHAMOE_SCORING_SIGMOID, ALPHAMOE_LOGITS_F32, 8, 4, 2.5f,
                             ALPHAMOE_FLAG_CORRECTION_BIAS, 0},
    [FLAVOUR_KIMI_K2] = {"-kimi-k2", ALPHAMOE_SCORING_SIGMOID, ALPHAMOE_LOGITS_F32, 0, 0, 2.827f,
                         ALPHAMOE_FLAG_CORRECTION_BIAS, 0},
    [FLAVOUR_QWEN2_MOE] = {"-qwen2-moe", ALPHAMOE_SCORING_SOFTMAX, ALPHAMOE_LOGITS_F32, 0, 0, 0.0f,
                           ALPHAMOE_FLAG_NO_RENORMALIZE, 0},
    [FLAVOUR_LLAMA4] = {"-llama4", ALPHAMOE_SCORING_SIGMOID, ALPHAMOE_LOGITS_F32, 0, 0, 0.0f,
                        ALPHAMOE_FLAG_NO_RENORMALIZE, 0},
    [FLAVOUR_BF16] = {"-bf16", ALPHAMOE_SCORING_SOFTMAX, ALPHAMOE_LOGITS_BF16, 0, 0, 0.0f, 0u, 0},
    [FLAVOUR_EXPERT_MAP] = {"-ep-map64", ALPHAMOE_SCORING_SOFTMAX, ALPHAMOE_LOGITS_F32, 0, 0, 0.0f, 0u, 64},
    [FLAVOUR_F16] = {"-f16", ALPHAMOE_SCORING_SOFTMAX, ALPHAMOE_LOGITS_F16, 0, 0, 0.0f, 0u, 0},
    [FLAVOUR_DEEPSEEK_V3_BF16] = {"-deepseek-v3-bf16", ALPHAMOE_SCORING_SIGMOID, ALPHAMOE_LOGITS_BF16, 8, 4, 2.5f,
                                  ALPHAMOE_FLAG_CORRECTION_BIAS, 0},
};

const bench_flavour *bench_flavour_get(int32_t flavour) {
    return flavour >= 0 && flavour < FLAVOUR_COUNT ? &kFlavours[flavour] : &kFlavours[FLAVOUR_DEFAULT];
}
