#include "bench_shapes.h"

#include "alphamoe/router.h"
#include "bench_flavours.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_check.h"

const int32_t kSweepTokens[] = {1,   2,   4,   8,   12,   16,   24,   32,   48,   64,   96,
                                128, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384};
const int32_t kSweepTokenCount = (int32_t)(sizeof(kSweepTokens) / sizeof(kSweepTokens[0]));
const int32_t kQuickSweepTokens[] = {1, 32, 512, 4096};
const int32_t kQuickSweepTokenCount = (int32_t)(sizeof(kQuickSweepTokens) / sizeof(kQuickSweepTokens[0]));

typedef struct base_shape {
    int32_t experts, tokens, top_k, block_m;
    double stock_us;
} base_shape;

const stock_reference kStockReference = {
    "NVIDIA H200",
    "the usual top-k softmax kernel plus the block-align kernels, their kernel durations summed as this benchmark "
    "sums the router's (CUPTI, L2 evicted before every sample), measured once on an NVIDIA H200 (driver 580.159.04, "
    "CUDA 13.0)"};

bool stock_applies(const char *device_name) { return strcmp(device_name, kStockReference.gpu) == 0; }

/* stock_us: kStockReference's figure for the shape, 0 where none. */
static const base_shape kBases[] = {
    {512, 1, 10, 8, 9.63},     {512, 8, 10, 8, 10.05},    {512, 32, 8, 16, 9.47},
    {512, 128, 8, 16, 9.63},   {512, 128, 10, 8, 10.95},  {512, 512, 10, 8, 12.80},
    {512, 4096, 10, 64, 36.2}, {512, 16384, 10, 8, 135.6},
    {256, 1, 8, 64, 0.0},      {256, 64, 8, 64, 0.0},     {256, 1024, 8, 64, 0.0},
    {256, 8192, 8, 64, 0.0},   {128, 64, 8, 64, 0.0},     {128, 4096, 8, 64, 25.8},
    {8, 16, 2, 64, 0.0},       {8, 4096, 2, 64, 9.4},
    {2048, 1, 32, 64, 0.0},    {2048, 2048, 32, 64, 0.0},
};

/* The targets: the widest rows (E2048 k32) by name; by batch size up to
 * 512 tokens; the two large E512 shapes by name; the rest are measured
 * without a target. */
static void set_target(bench_shape *s) {
    s->target = TARGET_MICROSECONDS;
    if (s->experts == 2048 && s->tokens == 1)
        s->target_value = 4.0;
    else if (s->experts == 2048) {
        s->target = TARGET_BANDWIDTH_RATIO;
        s->target_value = 1.5;
    } else if (s->tokens == 1)
        s->target_value = 1.6;
    else if (s->tokens <= 8)
        s->target_value = 2.0;
    else if (s->tokens <= 128)
        s->target_value = 3.0;
    else if (s->tokens <= 512)
        s->target_value = 4.0;
    else if (s->experts == 512 && s->tokens == 4096 && s->top_k == 10 && s->block_m == 64)
        s->target_value = 6.0;
    else if (s->experts == 512 && s->tokens == 16384 && s->top_k == 10 && s->block_m == 8) {
        s->target = TARGET_BANDWIDTH_RATIO;
        s->target_value = 1.5;
    } else {
        s->target = TARGET_NONE;
        s->target_value = 0.0;
    }
}

/* The routing flavours, each at the model's own shape; target_us > 0: its
 * target. */
typedef struct flavour_shape {
    int32_t experts, tokens, top_k, block_m, flavour;
    double target_us;
} flavour_shape;

static const flavour_shape kFlavourShapes[] = {
    {256, 1, 8, 64, FLAVOUR_DEEPSEEK_V3, 0.0},    {256, 8, 8, 64, FLAVOUR_DEEPSEEK_V3, 0.0},
    {256, 128, 8, 64, FLAVOUR_DEEPSEEK_V3, 0.0},  {256, 4096, 8, 64, FLAVOUR_DEEPSEEK_V3, 0.0},
    {384, 1, 8, 64, FLAVOUR_KIMI_K2, 0.0},        {384, 4096, 8, 64, FLAVOUR_KIMI_K2, 0.0},
    {60, 1, 4, 64, FLAVOUR_QWEN2_MOE, 0.0},       {60, 4096, 4, 64, FLAVOUR_QWEN2_MOE, 0.0},
    {16, 1, 1, 64, FLAVOUR_LLAMA4, 0.0},          {16, 4096, 1, 64, FLAVOUR_LLAMA4, 0.0},
    {512, 1, 10, 8, FLAVOUR_BF16, 0.0},           {512, 4096, 10, 64, FLAVOUR_BF16, 0.0},
    {512, 4096, 10, 64, FLAVOUR_EXPERT_MAP, 0.0}, {512, 1, 10, 8, FLAVOUR_F16, 0.0},
    {512, 4096, 10, 64, FLAVOUR_F16, 0.0},        {512, 16384, 10, 8, FLAVOUR_BF16, 0.0},
    {256, 8192, 8, 64, FLAVOUR_BF16, 0.0},        {128, 4096, 8, 64, FLAVOUR_BF16, 0.0},
    {256, 1, 8, 64, FLAVOUR_DEEPSEEK_V3_BF16, 0.0}, {256, 4096, 8, 64, FLAVOUR_DEEPSEEK_V3_BF16, 0.0},
    {384, 1, 6, 64, FLAVOUR_DEEPSEEK_V4_PRO, 2.5}, {384, 4096, 6, 64, FLAVOUR_DEEPSEEK_V4_PRO, 10.0},
    {896, 1, 16, 64, FLAVOUR_KIMI_K3, 3.0},    {896, 128, 16, 64, FLAVOUR_KIMI_K3, 5.0},
    {896, 2048, 16, 64, FLAVOUR_KIMI_K3, 10.0},
    {384, 1, 6, 64, FLAVOUR_DEEPSEEK_V4_HASH, 2.0}, {384, 4096, 6, 64, FLAVOUR_DEEPSEEK_V4_HASH, 6.0},
    {256, 1, 8, 64, FLAVOUR_DEEPSEEK_V3_EPLB, 0.0}, {256, 4096, 8, 64, FLAVOUR_DEEPSEEK_V3_EPLB, 0.0},
};

static void make_shape(const base_shape *b, bool shared, bench_shape *s) {
    memset(s, 0, sizeof(*s));
    s->experts = b->experts;
    s->tokens = b->tokens;
    s->top_k = b->top_k;
    s->block_m = b->block_m;
    s->shared = shared;
    s->stock_us = shared ? 0.0 : b->stock_us;
    snprintf(s->name, sizeof(s->name), "e%d-m%d-k%d-bm%d%s", (int)b->experts, (int)b->tokens, (int)b->top_k,
             (int)b->block_m, shared ? "-shared" : "");
    set_target(s);
}

void shape_table(bench_shape out[SHAPE_COUNT]) {
    /* SHAPE_COUNT is written by hand: a table that no longer matches it
     * stops here, before a shape is written past the end. */
    size_t count = sizeof(kFlavourShapes) / sizeof(kFlavourShapes[0]);
    for (size_t i = 0; i < sizeof(kBases) / sizeof(kBases[0]); ++i) count += kBases[i].experts == 512 ? 2 : 1;
    if (count != SHAPE_COUNT) {
        fprintf(stderr, "alphamoe-bench: %zu shapes in the tables, SHAPE_COUNT is %d\n", count, SHAPE_COUNT);
        abort();
    }
    int32_t n = 0;
    for (size_t i = 0; i < sizeof(kBases) / sizeof(kBases[0]); ++i) {
        make_shape(&kBases[i], false, &out[n++]);
        if (kBases[i].experts == 512) make_shape(&kBases[i], true, &out[n++]);
    }
    for (size_t i = 0; i < sizeof(kFlavourShapes) / sizeof(kFlavourShapes[0]); ++i) {
        const flavour_shape *f = &kFlavourShapes[i];
        bench_shape *s = &out[n++];
        memset(s, 0, sizeof(*s));
        s->experts = f->experts;
        s->tokens = f->tokens;
        s->top_k = f->top_k;
        s->block_m = f->block_m;
        s->flavour = f->flavour;
        s->target = f->target_us > 0.0 ? TARGET_MICROSECONDS : TARGET_NONE;
        s->target_value = f->target_us;
        snprintf(s->name, sizeof(s->name), "e%d-m%d-k%d-bm%d%s", (int)f->experts, (int)f->tokens, (int)f->top_k,
                 (int)f->block_m, bench_flavour_get(f->flavour)->suffix);
    }
}

static int select_one(const char *item, const bench_shape *shapes, int32_t n, bool *selected) {
    if (strcmp(item, "all") == 0) {
        for (int32_t i = 0; i < n; ++i) selected[i] = true;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    const long index = strtol(item, &end, 10);
    if (*item != '\0' && *end == '\0' && errno == 0) {
        if (index < 0 || index >= n) {
            fprintf(stderr, BENCH_PROG ": --shapes: index %ld is outside 0..%d\n", index, (int)n - 1);
            return -1;
        }
        selected[index] = true;
        return 0;
    }
    for (int32_t i = 0; i < n; ++i)
        if (strcmp(shapes[i].name, item) == 0) {
            selected[i] = true;
            return 0;
        }
    fprintf(stderr, BENCH_PROG ": --shapes: no shape is called \"%s\" (--list shows them)\n", item);
    return -1;
}

int select_shapes(const char *list, const bench_shape *shapes, int32_t n, bool *selected) {
    for (int32_t i = 0; i < n; ++i) selected[i] = false;
    char *copy = strdup(list);
    if (copy == NULL) return -1;
    int rc = 0, count = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); rc == 0 && item; item = strtok_r(NULL, ",", &save), ++count)
        rc = select_one(item, shapes, n, selected);
    free(copy);
    if (rc == 0 && count == 0) {
        fprintf(stderr, BENCH_PROG ": --shapes: the list is empty\n");
        rc = -1;
    }
    return rc;
}

void format_target(const bench_shape *s, char *buf, size_t size) {
    switch (s->target) {
    case TARGET_MICROSECONDS: snprintf(buf, size, "<=%.1fus", s->target_value); break;
    case TARGET_BANDWIDTH_RATIO: snprintf(buf, size, "<=%.1fx bw", s->target_value); break;
    default: snprintf(buf, size, "-"); break;
    }
}

int64_t shape_logits_bytes(const bench_shape *s) {
    const int64_t element = bench_flavour_get(s->flavour)->logits_type == ALPHAMOE_LOGITS_F32 ? 4 : 2;
    return (int64_t)s->tokens * s->experts * element;
}
