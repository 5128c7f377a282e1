#include "presets.h"

#include <string.h>

#define SMX ALPHAMOE_SCORING_SOFTMAX
#define SIG ALPHAMOE_SCORING_SIGMOID
#define SSP ALPHAMOE_SCORING_SQRT_SOFTPLUS
#define BIAS ALPHAMOE_FLAG_CORRECTION_BIAS
#define NO_RENORM ALPHAMOE_FLAG_NO_RENORMALIZE

const model_preset kModelPresets[PRESET_COUNT] = {
    [PRESET_QWEN3_NEXT] = {"qwen3-next", 512, 10, SMX, 0u, 0, 0, 0.0f,
                           "Qwen3-Next: softmax top-10 of 512, renormalized"},
    [PRESET_QWEN3_MOE] = {"qwen3-moe", 128, 8, SMX, 0u, 0, 0, 0.0f, "Qwen3-MoE: softmax top-8 of 128, renormalized"},
    [PRESET_DEEPSEEK_V3] = {"deepseek-v3", 256, 8, SIG, BIAS, 8, 4, 2.5f,
                            "DeepSeek-V3/R1: sigmoid, bias, 8 groups keep 4, top-8 of 256, scale 2.5"},
    [PRESET_KIMI_K2] = {"kimi-k2", 384, 8, SIG, BIAS, 1, 1, 2.827f,
                        "Kimi-K2: sigmoid, bias, top-8 of 384, scale 2.827"},
    [PRESET_KIMI_K3] = {"kimi-k3", 896, 16, SIG, BIAS, 1, 1, 1.0f, "Kimi-K3: sigmoid, bias, top-16 of 896"},
    [PRESET_GLM_45] = {"glm-4.5", 160, 8, SIG, BIAS, 1, 1, 2.5f, "GLM-4.5: sigmoid, bias, top-8 of 160, scale 2.5"},
    [PRESET_DEEPSEEK_V4_FLASH] = {"deepseek-v4-flash", 256, 6, SSP, BIAS, 0, 0, 1.5f,
                                  "DeepSeek-V4-Flash: sqrt-softplus, bias, top-6 of 256, scale 1.5"},
    [PRESET_DEEPSEEK_V4_PRO] = {"deepseek-v4-pro", 384, 6, SSP, BIAS, 0, 0, 2.5f,
                                "DeepSeek-V4-Pro: sqrt-softplus, bias, top-6 of 384, scale 2.5"},
    [PRESET_DEEPSEEK_V4_HASH] = {"deepseek-v4-hash", 384, 6, SSP, 0u, 0, 0, 2.5f,
                                 "DeepSeek-V4-Pro's hash layers: top-6 of 384 by token id, sqrt-softplus weights, "
                                 "scale 2.5",
                                 129280},
    [PRESET_QWEN2_MOE] = {"qwen2-moe", 60, 4, SMX, NO_RENORM, 0, 0, 0.0f,
                          "Qwen1.5/Qwen2-MoE: softmax top-4 of 60, full-row probabilities (no renormalization)"},
    [PRESET_LLAMA4] = {"llama4", 16, 1, SIG, NO_RENORM, 0, 0, 0.0f,
                       "Llama-4: top-1 of 16 by logit, weight sigmoid(logit)"},
    [PRESET_MIXTRAL] = {"mixtral", 8, 2, SMX, 0u, 0, 0, 0.0f, "Mixtral: softmax top-2 of 8, renormalized"},
};

const model_preset *preset_find(const char *name) {
    for (int i = 0; i < PRESET_COUNT; ++i)
        if (strcmp(kModelPresets[i].name, name) == 0) return &kModelPresets[i];
    return NULL;
}

const char *scoring_text(int32_t scoring) {
    return scoring == SMX ? "softmax" : scoring == SIG ? "sigmoid" : scoring == SSP ? "sqrt-softplus" : "unknown";
}

void preset_flavour(const model_preset *m, alphamoe_params *p) {
    p->scoring = m->scoring;
    p->flags = (p->flags & ~(uint32_t)(BIAS | NO_RENORM)) | m->flags;
    p->num_groups = m->groups;
    p->topk_groups = m->topk_groups;
    p->routed_scaling_factor = m->scale;
    if (m->vocab > 0) {
        p->flags |= ALPHAMOE_FLAG_HASH_ROUTING;
        p->vocab_size = m->vocab;
    }
}
