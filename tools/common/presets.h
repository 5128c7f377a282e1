/*
 * The routers of the models the tools and tests route like: one table,
 * read by alphamoe-route's --preset, by alphamoe-bench's flavoured shapes
 * and by the GPU flavour tests.
 */
#ifndef ALPHAMOE_TOOLS_PRESETS_H
#define ALPHAMOE_TOOLS_PRESETS_H

#include <stdint.h>

#include "alphamoe/router.h"

typedef struct model_preset {
    const char *name;     /* --preset NAME; the benchmark's shape suffix */
    int32_t experts;
    int32_t top_k;
    int32_t scoring;      /* alphamoe_scoring */
    uint32_t flags;       /* among ALPHAMOE_FLAG_CORRECTION_BIAS and ALPHAMOE_FLAG_NO_RENORMALIZE */
    int32_t groups;       /* 0: none */
    int32_t topk_groups;
    float scale;          /* 0: 1 */
    const char *note;     /* the model, for --help */
    int32_t vocab;        /* > 0: hash routing, the experts from a random table of this many token ids */
} model_preset;

enum {
    PRESET_QWEN3_NEXT, /* the default */
    PRESET_QWEN3_MOE,
    PRESET_DEEPSEEK_V3,
    PRESET_KIMI_K2,
    PRESET_KIMI_K3,
    PRESET_GLM_45,
    PRESET_DEEPSEEK_V4_FLASH,
    PRESET_DEEPSEEK_V4_PRO,
    PRESET_DEEPSEEK_V4_HASH,
    PRESET_QWEN2_MOE,
    PRESET_LLAMA4,
    PRESET_MIXTRAL,
    PRESET_COUNT
};

extern const model_preset kModelPresets[PRESET_COUNT];

/* The preset called `name`, or NULL. */
const model_preset *preset_find(const char *name);

/* "softmax", "sigmoid" or "sqrt-softplus": an alphamoe_scoring as the
 * tools name it (--scoring). */
const char *scoring_text(int32_t scoring);

/* Sets the routing flavour of p (scoring, bias, renormalization, groups,
 * scale) to the preset's; the shape (experts, top_k, ...) is left alone. */
void preset_flavour(const model_preset *m, alphamoe_params *p);

#endif
