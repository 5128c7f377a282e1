#include "cli_options.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alphamoe/router_diagnostics.h"
#include "options.h"

const char *logits_type_name(int32_t type) {
    switch (type) {
    case ALPHAMOE_LOGITS_BF16: return "bf16";
    case ALPHAMOE_LOGITS_F16: return "f16";
    default: return "f32";
    }
}

void print_usage(FILE *f) {
    fprintf(f,
            "usage: " PROG " [options]\n"
            "\n"
            "Routes one batch of router logits with the AlphaMoE router, times the call,\n"
            "checks it against the CPU reference and prints per-expert load statistics.\n"
            "\n"
            "  --preset NAME         the model's router (default qwen3-next):\n");
    for (int i = 0; i < PRESET_COUNT; ++i)
        fprintf(f, "                          %-12s %s\n", kModelPresets[i].name, kModelPresets[i].note);
    fprintf(f,
            "  --experts N           number of experts E (overrides the preset)\n"
            "  --top-k K             experts per token k (overrides the preset)\n"
            "  --scoring S           softmax, sigmoid or sqrt-softplus (overrides the preset)\n"
            "  --bias [FILE.npy]     a correction bias (sigmoid or sqrt-softplus scoring):\n"
            "                        float32 [E] from the\n"
            "                        file, else random in [-0.1, 0.1) from --seed\n"
            "  --no-bias             no correction bias\n"
            "  --no-renormalize, --renormalize\n"
            "                        weights renormalized over the chosen experts or not\n"
            "  --scale F             routed scaling factor multiplying every weight\n"
            "  --groups G            expert groups (0: none); --topk-groups N: groups kept\n"
            "  --dtype T             logits type: f32 (default), bf16 or f16; random logits are\n"
            "                        rounded to it (to nearest even); with --input it is the\n"
            "                        file's type, which --dtype must match\n"
            "  --ep-range B:C        expert parallelism: local experts [B, B+C)\n"
            "  --ep-map-random C     expert parallelism: C random local experts by an expert map\n"
            "  --expert-map FILE.npy expert parallelism by the expert map in the file: int32 (or\n"
            "                        int64) [E], each entry -1 or a distinct local id; the local\n"
            "                        experts are 0 to the largest id\n"
            "  --tokens M            tokens in the batch (default 128)\n"
            "  --block-m B           rows per expert block of the plan (default 16)\n"
            "  --shared              slot k-1 is always the shared expert E-1\n"
            "  --tail-fill           fill the plan past its live length up to capacity\n"
            "  --seed S              seed of the random logits, bias and map (default 1)\n"
            "  --input FILE.npy      logits [M, E], M and E from the file: float32 ('<f4'),\n"
            "                        float16 ('<f2'), bfloat16 ('<V2', as NumPy saves an\n"
            "                        ml_dtypes.bfloat16 array), or 16-bit patterns ('<u2' or\n"
            "                        '<i2', e.g. torch's x.view(torch.int16)) with --dtype bf16\n"
            "                        or f16\n"
            "  --output DIR          write topk_ids, topk_weights, sorted_token_ids, expert_ids,\n"
            "                        expert_counts and expert_offsets as .npy files into DIR,\n"
            "                        and the correction_bias and expert_map used, if any\n"
            "  --specialization S    auto (default), tiny, small or large (needs a GPU)\n"
            "  --host                run the CPU reference even when a GPU is present (also\n"
            "                        used for flavours the GPU kernels do not implement)\n"
            "  --repeat N            timed calls (default: 100 on a GPU; on the CPU as many as\n"
            "                        fit in about a second, at most 100)\n"
            "  --device N            CUDA device ordinal (default 0; needs a GPU)\n"
            "  --version             show the versions of this tool and of the library, and\n"
            "                        the kernel images the library holds\n"
            "  --help                show this text\n");
}

static void say(const char *fmt, va_list ap) {
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    say(fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    print_usage(stderr);
    return EXIT_USAGE;
}

int arg_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    say(fmt, ap);
    va_end(ap);
    return EXIT_USAGE;
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

static int parse_named(const char *name, const char *value, const char *const *names, const int32_t *values,
                       size_t n, const char *choices, int32_t *out) {
    for (size_t i = 0; i < n; ++i) {
        if (strcmp(names[i], value) == 0) {
            *out = values[i];
            return 0;
        }
    }
    return usage_error("%s: '%s' is not %s", name, value, choices);
}

static int parse_scale(const char *value, float *out) {
    char *end = NULL;
    errno = 0;
    const float v = strtof(value, &end);
    /* The library decides what it accepts (finite, >= 0); this only reads
     * a number. */
    if (errno != 0 || end == value || *end != '\0') return usage_error("--scale: '%s' is not a number", value);
    *out = v;
    return 0;
}

static int parse_range(const char *value, int32_t *begin, int32_t *count) {
    const char *colon = strchr(value, ':');
    char head[32];
    long long b = 0, c = 0;
    bool ok = colon != NULL && (size_t)(colon - value) < sizeof(head);
    if (ok) {
        memcpy(head, value, (size_t)(colon - value));
        head[colon - value] = '\0';
        ok = parse_integer(head, 0, INT32_MAX, &b) && parse_integer(colon + 1, 1, INT32_MAX, &c);
    }
    if (!ok) return usage_error("--ep-range: '%s' is not BEGIN:COUNT (BEGIN >= 0, COUNT >= 1)", value);
    *begin = (int32_t)b;
    *count = (int32_t)c;
    return 0;
}

static int apply_valued_option(options *o, const char *name, const char *value) {
    if (strcmp(name, "--scoring") == 0) {
        static const char *const names[] = {"softmax", "sigmoid", "sqrt-softplus"};
        static const int32_t values[] = {ALPHAMOE_SCORING_SOFTMAX, ALPHAMOE_SCORING_SIGMOID,
                                         ALPHAMOE_SCORING_SQRT_SOFTPLUS};
        return parse_named(name, value, names, values, 3, "softmax, sigmoid or sqrt-softplus", &o->scoring);
    }
    if (strcmp(name, "--dtype") == 0) {
        static const char *const names[] = {"f32", "bf16", "f16"};
        static const int32_t values[] = {ALPHAMOE_LOGITS_F32, ALPHAMOE_LOGITS_BF16, ALPHAMOE_LOGITS_F16};
        o->dtype_given = true;
        return parse_named(name, value, names, values, 3, "f32, bf16 or f16", &o->logits_type);
    }
    if (strcmp(name, "--scale") == 0) {
        o->scale_given = true;
        return parse_scale(value, &o->scale);
    }
    if (strcmp(name, "--groups") == 0) return set_int(name, value, 0, INT32_MAX, &o->groups);
    if (strcmp(name, "--topk-groups") == 0) return set_int(name, value, 0, INT32_MAX, &o->topk_groups);
    if (strcmp(name, "--ep-range") == 0) {
        o->ep_range = true;
        return parse_range(value, &o->ep_begin, &o->ep_count);
    }
    if (strcmp(name, "--ep-map-random") == 0) {
        o->ep_map_random = true;
        return set_int(name, value, 1, INT32_MAX, &o->ep_map_count);
    }
    if (strcmp(name, "--expert-map") == 0) {
        o->map_file = value;
        return 0;
    }
    if (strcmp(name, "--preset") == 0) {
        o->preset_given = true;
        o->preset = preset_find(value);
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
    if (strcmp(name, "--device") == 0) {
        o->device_given = true;
        return set_int(name, value, 0, INT32_MAX, &o->device);
    }
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
 * takes one, PARSE_HELP or PARSE_VERSION. */
static int apply_flag_option(options *o, const char *name) {
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) return PARSE_HELP;
    if (strcmp(name, "--version") == 0) return PARSE_VERSION;
    if (strcmp(name, "--shared") == 0) o->flags |= ALPHAMOE_FLAG_SHARED_EXPERT;
    else if (strcmp(name, "--tail-fill") == 0) o->flags |= ALPHAMOE_FLAG_TAIL_FILL;
    else if (strcmp(name, "--host") == 0) o->host = true;
    else if (strcmp(name, "--no-bias") == 0) {
        o->bias = 0;
        o->bias_file = NULL;
    }
    else if (strcmp(name, "--renormalize") == 0) o->renormalize = 1;
    else if (strcmp(name, "--no-renormalize") == 0) o->renormalize = 0;
    else return 0;
    return 1;
}

static bool takes_value(const char *name) {
    static const char *const valued[] = {"--preset", "--experts", "--top-k", "--tokens", "--block-m",
                                         "--seed", "--input", "--output", "--specialization",
                                         "--repeat", "--device", "--scoring", "--dtype", "--scale",
                                         "--groups", "--topk-groups", "--ep-range", "--ep-map-random",
                                         "--expert-map"};
    for (size_t i = 0; i < sizeof(valued) / sizeof(valued[0]); ++i)
        if (strcmp(valued[i], name) == 0) return true;
    return false;
}

/* Options that contradict each other, whatever the machine. */
static int check_combination(const options *o) {
    const int chosen = o->ep_range + o->ep_map_random + (o->map_file != NULL);
    if (chosen > 1)
        return usage_error("--ep-range, --ep-map-random and --expert-map all choose the local experts: give one "
                           "of them");
    if (o->host && o->specialization != ALPHAMOE_SPECIALIZATION_AUTO)
        return usage_error("--specialization chooses a GPU kernel, and --host runs the CPU reference: give one of "
                           "them");
    if (o->host && o->device_given)
        return usage_error("--device chooses a GPU, and --host runs the CPU reference: give one of them");
    return 0;
}

int parse_args(int argc, char **argv, options *o) {
    for (int i = 1; i < argc; ++i) {
        char name[64];
        const char *arg = argv[i];
        const char *value = NULL;
        if (!option_split(arg, name, sizeof(name), &value)) return usage_error("unknown option '%s'", arg);

        if (strcmp(name, "--bias") == 0) {
            /* The file is optional; the command takes no other operand, so
             * a following word that is not an option can only be it. */
            if (value == NULL && i + 1 < argc && argv[i + 1][0] != '-') value = argv[++i];
            if (value != NULL && value[0] == '\0') return usage_error("--bias=: the file name is empty");
            o->bias = 1;
            o->bias_file = value;
            continue;
        }
        const int flag = apply_flag_option(o, name);
        if (flag < 0) return flag;
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
    return check_combination(o);
}

void default_options(options *o) {
    memset(o, 0, sizeof(*o));
    o->preset = &kModelPresets[PRESET_QWEN3_NEXT];
    o->tokens = 128;
    o->block_m = 16;
    o->seed = 1;
    o->specialization = ALPHAMOE_SPECIALIZATION_AUTO;
    o->repeat = 0;
    o->scoring = -1;
    o->bias = -1;
    o->renormalize = -1;
    o->groups = -1;
    o->topk_groups = -1;
    o->logits_type = ALPHAMOE_LOGITS_F32;
}

alphamoe_params options_params(const options *o) {
    const model_preset *pr = o->preset;
    alphamoe_params p;
    memset(&p, 0, sizeof(p));
    p.struct_size = sizeof(p);
    p.num_experts = o->experts ? o->experts : pr->experts;
    p.top_k = o->top_k ? o->top_k : pr->top_k;
    p.block_m = o->block_m;
    p.max_tokens = o->tokens;
    p.flags = o->flags;
    p.force_specialization = o->specialization;
    preset_flavour(pr, &p);
    if (o->scoring >= 0) p.scoring = o->scoring;
    if (o->bias == 0) p.flags &= ~(uint32_t)ALPHAMOE_FLAG_CORRECTION_BIAS;
    if (o->bias > 0) p.flags |= ALPHAMOE_FLAG_CORRECTION_BIAS;
    if (o->renormalize == 0) p.flags |= ALPHAMOE_FLAG_NO_RENORMALIZE;
    if (o->renormalize > 0) p.flags &= ~(uint32_t)ALPHAMOE_FLAG_NO_RENORMALIZE;
    if (o->scale_given) p.routed_scaling_factor = o->scale;
    if (o->groups >= 0) p.num_groups = o->groups;
    /* Groups given without the number kept: keep them all. */
    if (o->groups >= 0 || o->topk_groups >= 0) p.topk_groups = o->topk_groups >= 0 ? o->topk_groups : 0;
    p.logits_type = o->logits_type;
    if (o->ep_range) {
        p.local_expert_begin = o->ep_begin;
        p.local_expert_count = o->ep_count;
    } else if (o->ep_map_count > 0) { /* random or from --expert-map */
        p.flags |= ALPHAMOE_FLAG_EXPERT_MAP;
        p.local_expert_count = o->ep_map_count;
    }
    return p;
}

/* "--top-k 20" when the option was given, else "top-k 10 (preset
 * qwen3-next)": the value the router got, named as the user can change it. */
static const char *origin(char *buf, size_t size, bool given, const char *flag, const char *value,
                          const options *o) {
    if (given) snprintf(buf, size, "%s %s", flag, value);
    else snprintf(buf, size, "%s %s (preset %s)", flag + 2, value, o->preset->name);
    return buf;
}

/* The status's name: its message up to the colon, which goes on to name
 * the C fields. */
static void status_name(alphamoe_status status, char *buf, size_t size) {
    const char *text = alphamoe_status_string(status);
    const char *colon = strchr(text, ':');
    const size_t n = colon ? (size_t)(colon - text) : strlen(text);
    snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), text);
}

int params_error(const options *o, const alphamoe_params *p, alphamoe_status status) {
    char name[64], a[160], b[160], v[32];
    status_name(status, name, sizeof(name));
    const int32_t E = p->num_experts;
    switch (status) {
    case ALPHAMOE_ERROR_NUM_EXPERTS:
        if (o->input)
            return arg_error("%s has %" PRId32 " experts per row: at most %d (%s)", o->input, E, ALPHAMOE_MAX_EXPERTS,
                             name);
        return arg_error("--experts %" PRId32 ": the experts must number 1 to %d (%s)", E, ALPHAMOE_MAX_EXPERTS, name);
    case ALPHAMOE_ERROR_TOP_K:
        snprintf(v, sizeof(v), "%" PRId32, p->top_k);
        return arg_error("%s with %" PRId32 " experts: top-k must be in [1, min(experts, %d)] (%s)",
                         origin(a, sizeof(a), o->top_k != 0, "--top-k", v, o), E, ALPHAMOE_MAX_TOP_K, name);
    case ALPHAMOE_ERROR_BLOCK_M:
        return arg_error("--block-m %" PRId32 ": must be in [1, 256] (%s)", p->block_m, name);
    case ALPHAMOE_ERROR_MAX_TOKENS:
        return arg_error("%s%" PRId32 " tokens with top-k %" PRId32 " and --block-m %" PRId32
                         ": the plan must fit int32 (tokens x top-k, and the plan padded to blocks, at most "
                         "2^31 - 1) (%s)",
                         o->input ? "" : "--tokens: ", p->max_tokens, p->top_k, p->block_m, name);
    case ALPHAMOE_ERROR_SHARED_EXPERT:
        return arg_error("--shared needs top-k >= 2, softmax scoring and no expert groups; here top-k %" PRId32
                         ", %s scoring, %" PRId32 " group(s) (%s)",
                         p->top_k, scoring_text(p->scoring),
                         p->num_groups > 1 ? p->num_groups : 1, name);
    case ALPHAMOE_ERROR_SCORING:
        if (o->bias > 0)
            snprintf(a, sizeof(a), "--bias%s%s", o->bias_file ? " " : "", o->bias_file ? o->bias_file : "");
        else snprintf(a, sizeof(a), "the correction bias of preset %s", o->preset->name);
        if (o->scoring >= 0) snprintf(b, sizeof(b), "--scoring softmax");
        else snprintf(b, sizeof(b), "the softmax of preset %s (give --scoring sigmoid)", o->preset->name);
        return arg_error("%s needs sigmoid or sqrt-softplus scoring, not %s (%s)", a, b, name);
    case ALPHAMOE_ERROR_LOGITS_TYPE:
        return arg_error("--dtype: %" PRId32 " is not a logits type (%s)", p->logits_type, name);
    case ALPHAMOE_ERROR_GROUPS:
        snprintf(v, sizeof(v), "%" PRId32, p->num_groups);
        origin(a, sizeof(a), o->groups >= 0, "--groups", v, o);
        snprintf(v, sizeof(v), "%" PRId32, p->topk_groups);
        if (o->topk_groups < 0 && o->groups >= 0) snprintf(b, sizeof(b), "all kept");
        else origin(b, sizeof(b), o->topk_groups >= 0, "--topk-groups", v, o);
        return arg_error("%s, %s, top-k %" PRId32 ", %" PRId32 " experts: the groups must divide the experts, "
                         "--topk-groups must be at most --groups (0: all), and the kept groups must hold at "
                         "least top-k experts (%s)",
                         a, b, p->top_k, E, name);
    case ALPHAMOE_ERROR_SCALING_FACTOR:
        snprintf(v, sizeof(v), "%g", (double)p->routed_scaling_factor);
        return arg_error("%s: the routed scaling factor must be finite and > 0 (%s)",
                         origin(a, sizeof(a), o->scale_given, "--scale", v, o), name);
    case ALPHAMOE_ERROR_EXPERT_PARALLEL:
        if (o->ep_range)
            return arg_error("--ep-range %" PRId32 ":%" PRId32 " with %" PRId32
                             " experts: the local experts [BEGIN, BEGIN+COUNT) must lie inside [0, %" PRId32
                             ") (%s)",
                             o->ep_begin, o->ep_count, E, E, name);
        return arg_error("%s %" PRId32 " local experts with %" PRId32 " experts: the count must be in [1, %" PRId32
                         "] (%s)",
                         o->map_file ? "--expert-map:" : "--ep-map-random:", o->ep_map_count, E, E, name);
    default:
        /* Statuses no option of this command can cause. */
        return arg_error("the router refused its parameters: %s", alphamoe_status_string(status));
    }
}
