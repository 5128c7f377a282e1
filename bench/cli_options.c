#include "cli_options.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alphamoe/router.h"

static const preset kPresets[] = {
    {"qwen3-next", 512, 10},
    {"qwen3-moe", 128, 8},
    {"deepseek-v3", 256, 8},
    {"mixtral", 8, 2},
};

void print_usage(FILE *f) {
    fprintf(f,
            "usage: " PROG " [options]\n"
            "\n"
            "Routes one batch of router logits with the AlphaMoE router, times the call,\n"
            "checks it against the CPU reference and prints per-expert load statistics.\n"
            "\n"
            "  --preset NAME         qwen3-next (E=512, k=10; default), qwen3-moe (E=128, k=8),\n"
            "                        deepseek-v3 (E=256, k=8), mixtral (E=8, k=2)\n"
            "  --experts N           number of experts E (overrides the preset)\n"
            "  --top-k K             experts per token k (overrides the preset)\n"
            "  --tokens M            tokens in the batch (default 128)\n"
            "  --block-m B           rows per expert block of the plan (default 16)\n"
            "  --shared              slot k-1 is always the shared expert E-1\n"
            "  --tail-fill           fill the plan past its live length up to capacity\n"
            "  --seed S              seed of the random logits (default 1)\n"
            "  --input FILE.npy      float32 [M, E] logits; M and E come from the file\n"
            "  --output DIR          write topk_ids, topk_weights, sorted_token_ids, expert_ids,\n"
            "                        expert_counts and expert_offsets as .npy files into DIR\n"
            "  --specialization S    auto (default), tiny, small or large (GPU only)\n"
            "  --host                run the CPU reference even when a GPU is present\n"
            "  --repeat N            timed calls (default 100)\n"
            "  --device N            CUDA device ordinal (default 0)\n"
            "  --help                show this text\n");
}

int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n\n", stderr);
    va_end(ap);
    print_usage(stderr);
    return EXIT_USAGE;
}

static bool parse_integer(const char *text, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    const long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_u64(const char *text, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    /* strtoull accepts "-1" and wraps it; a seed that silently wraps is a
     * typo nobody would notice. */
    if (text[0] == '-' || text[0] == '\0') return false;
    const unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0') return false;
    *out = (uint64_t)v;
    return true;
}

static const preset *find_preset(const char *name) {
    for (size_t i = 0; i < sizeof(kPresets) / sizeof(kPresets[0]); ++i)
        if (strcmp(kPresets[i].name, name) == 0) return &kPresets[i];
    return NULL;
}

static int parse_specialization(const char *name, int32_t *out) {
    static const char *const names[] = {"auto", "tiny", "small", "large"};
    static const int32_t values[] = {ALPHAMOE_SPECIALIZATION_AUTO, ALPHAMOE_SPECIALIZATION_TINY,
                                     ALPHAMOE_SPECIALIZATION_SMALL, ALPHAMOE_SPECIALIZATION_LARGE};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        if (strcmp(names[i], name) == 0) {
            *out = values[i];
            return 0;
        }
    }
    return -1;
}

/* Stores an integer option; the library enforces its own upper limits
 * later, with its own messages. */
static int set_int(const char *name, const char *value, long long lo, long long hi, int32_t *field) {
    long long v = 0;
    if (!parse_integer(value, lo, hi, &v))
        return usage_error("%s: '%s' is not an integer in [%lld, %lld]", name, value, lo, hi);
    *field = (int32_t)v;
    return 0;
}

static int apply_valued_option(options *o, const char *name, const char *value) {
    if (strcmp(name, "--preset") == 0) {
        o->preset = find_preset(value);
        return o->preset ? 0 : usage_error("unknown preset '%s'", value);
    }
    if (strcmp(name, "--experts") == 0) return set_int(name, value, 1, INT32_MAX, &o->experts);
    if (strcmp(name, "--top-k") == 0) return set_int(name, value, 1, INT32_MAX, &o->top_k);
    if (strcmp(name, "--tokens") == 0) {
        o->tokens_given = true;
        return set_int(name, value, 0, INT32_MAX, &o->tokens);
    }
    if (strcmp(name, "--block-m") == 0) return set_int(name, value, 1, INT32_MAX, &o->block_m);
    if (strcmp(name, "--repeat") == 0) return set_int(name, value, 1, 10000000, &o->repeat);
    if (strcmp(name, "--device") == 0) return set_int(name, value, 0, INT32_MAX, &o->device);
    if (strcmp(name, "--seed") == 0)
        return parse_u64(value, &o->seed) ? 0 : usage_error("--seed: '%s' is not an unsigned integer", value);
    if (strcmp(name, "--input") == 0) {
        o->input = value;
        return 0;
    }
    if (strcmp(name, "--output") == 0) {
        o->output = value;
        return 0;
    }
    if (strcmp(name, "--specialization") == 0)
        return parse_specialization(value, &o->specialization) == 0
                   ? 0
                   : usage_error("--specialization: '%s' is not auto, tiny, small or large", value);
    return usage_error("unknown option '%s'", name);
}

/* Returns 1 when the option takes no value (and applies it), 0 when it
 * takes one, -1 for --help. */
static int apply_flag_option(options *o, const char *name) {
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) return -1;
    if (strcmp(name, "--shared") == 0) o->flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
    else if (strcmp(name, "--tail-fill") == 0) o->flags |= ALPHAMOE_FLAG_TAIL_FILL;
    else if (strcmp(name, "--host") == 0) o->host = true;
    else return 0;
    return 1;
}

static bool takes_value(const char *name) {
    static const char *const valued[] = {"--preset", "--experts", "--top-k", "--tokens", "--block-m",
                                         "--seed", "--input", "--output", "--specialization",
                                         "--repeat", "--device"};
    for (size_t i = 0; i < sizeof(valued) / sizeof(valued[0]); ++i)
        if (strcmp(valued[i], name) == 0) return true;
    return false;
}

int parse_args(int argc, char **argv, options *o) {
    for (int i = 1; i < argc; ++i) {
        char name[64];
        const char *arg = argv[i];
        const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
        const size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (name_len >= sizeof(name)) return usage_error("unknown option '%s'", arg);
        memcpy(name, arg, name_len);
        name[name_len] = '\0';
        const char *value = eq ? eq + 1 : NULL;

        const int flag = apply_flag_option(o, name);
        if (flag < 0) return PARSE_HELP;
        if (flag > 0) {
            if (value) return usage_error("%s takes no value", name);
            continue;
        }
        if (!takes_value(name))
            return name[0] == '-' ? usage_error("unknown option '%s'", name)
                                : usage_error("unexpected argument '%s'", arg);
        if (value == NULL) {
            if (i + 1 >= argc) return usage_error("%s needs a value", name);
            value = argv[++i];
        }
        const int rc = apply_valued_option(o, name, value);
        if (rc != 0) return rc;
    }
    return 0;
}

void default_options(options *o) {
    memset(o, 0, sizeof(*o));
    o->preset = &kPresets[0];
    o->tokens = 128;
    o->block_m = 16;
    o->seed = 1;
    o->specialization = ALPHAMOE_SPECIALIZATION_AUTO;
    o->repeat = 100;
}
