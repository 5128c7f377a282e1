#include "bench_flavours.h"

#include "alphamoe/router.h"

#define PRESET(name) (&kModelPresets[PRESET_##name])

static const bench_flavour kFlavours[FLAVOUR_COUNT] = {
    [FLAVOUR_DEFAULT] = {"", NULL, ALPHAMOE_LOGITS_F32, 0},
    [FLAVOUR_DEEPSEEK_V3] = {"-deepseek-v3", PRESET(DEEPSEEK_V3), ALPHAMOE_LOGITS_F32, 0},
    [FLAVOUR_KIMI_K2] = {"-kimi-k2", PRESET(KIMI_K2), ALPHAMOE_LOGITS_F32, 0},
    [FLAVOUR_QWEN2_MOE] = {"-qwen2-moe", PRESET(QWEN2_MOE), ALPHAMOE_LOGITS_F32, 0},
    [FLAVOUR_LLAMA4] = {"-llama4", PRESET(LLAMA4), ALPHAMOE_LOGITS_F32, 0},
    [FLAVOUR_BF16] = {"-bf16", NULL, ALPHAMOE_LOGITS_BF16, 0},
    [FLAVOUR_EXPERT_MAP] = {"-ep-map64", NULL, ALPHAMOE_LOGITS_F32, 64},
    [FLAVOUR_F16] = {"-f16", NULL, ALPHAMOE_LOGITS_F16, 0},
    [FLAVOUR_DEEPSEEK_V3_BF16] = {"-deepseek-v3-bf16", PRESET(DEEPSEEK_V3), ALPHAMOE_LOGITS_BF16, 0},
    [FLAVOUR_QWEN2_MOE_BF16] = {"-qwen2-moe-bf16", PRESET(QWEN2_MOE), ALPHAMOE_LOGITS_BF16, 0},
    [FLAVOUR_DEEPSEEK_V4_PRO] = {"-deepseek-v4-pro", PRESET(DEEPSEEK_V4_PRO), ALPHAMOE_LOGITS_F32, 0},
    [FLAVOUR_DEEPSEEK_V4_PRO_BF16] = {"-deepseek-v4-pro-bf16", PRESET(DEEPSEEK_V4_PRO), ALPHAMOE_LOGITS_BF16, 0},
    [FLAVOUR_KIMI_K3] = {"-kimi-k3", PRESET(KIMI_K3), ALPHAMOE_LOGITS_F32, 0},
    [FLAVOUR_DEEPSEEK_V4_HASH] = {"-deepseek-v4-hash", PRESET(DEEPSEEK_V4_HASH), ALPHAMOE_LOGITS_F32, 0},
    [FLAVOUR_DEEPSEEK_V3_EPLB] = {"-deepseek-v3-eplb32", PRESET(DEEPSEEK_V3), ALPHAMOE_LOGITS_F32, 0, 32},
};

const bench_flavour *bench_flavour_get(int32_t flavour) {
    return flavour >= 0 && flavour < FLAVOUR_COUNT ? &kFlavours[flavour] : &kFlavours[FLAVOUR_DEFAULT];
}

void bench_flavour_params(int32_t flavour, alphamoe_params *p) {
    const bench_flavour *fl = bench_flavour_get(flavour);
    if (fl->preset) preset_flavour(fl->preset, p);
    p->logits_type = fl->logits_type;
    if (fl->local_experts > 0) {
        p->flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        p->local_expert_count = fl->local_experts;
    }
    if (fl->redundant_experts > 0) {
        p->flags |= ALPHAMOE_FLAG_REDUNDANT_EXPERTS;
        p->num_physical_experts = p->num_experts + fl->redundant_experts;
        p->replica_slots = 2;
    }
}
