/*
 * alphamoe-route: routes one batch of router logits through the public C
 * API, times the call, checks the GPU against the library's own CPU
 * reference and prints how the load spreads over the experts.
 *
 * Only the public header and the CUDA runtime are used, so this file is
 * also a worked example of driving the library from C.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "alphamoe/router.h"
#include "npy.h"

#define PROG "alphamoe-route"
/* The first calls on a device pay for module loading and per-device
 * state; they are kept out of the timed loop. */
#define WARMUP_CALLS 3
#define TOP_LOADED 5
/* What the header promises between alphamoe_route and alphamoe_route_host. */
#define WEIGHT_TOLERANCE 4e-6

#define EXIT_USAGE 2

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

typedef struct preset {
    const char *name;
    int32_t experts;
    int32_t top_k;
} preset;

static const preset kPresets[] = {
    {"qwen3-next", 512, 10},
    {"qwen3-moe", 128, 8},
    {"deepseek-v3", 256, 8},
    {"mixtral", 8, 2},
};

typedef struct options {
    const preset *preset;
    int32_t experts; /* 0: the preset's */
    int32_t top_k;   /* 0: the preset's */
    int32_t tokens;
    bool tokens_given;
    int32_t block_m;
    uint32_t flags;
    uint64_t seed;
    const char *input;
    const char *output;
    int32_t specialization;
    bool host;
    int32_t repeat;
    int32_t device;
} options;

static void print_usage(FILE *f) {
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

static int usage_error(const char *fmt, ...) CLI_PRINTF(1, 2);

static int usage_error(const char *fmt, ...) {
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

#define PARSE_HELP (-1)

/* Accepts "--name value" and "--name=value". Returns 0, PARSE_HELP, or
 * EXIT_USAGE after printing why. */
static int parse_args(int argc, char **argv, options *o) {
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

static void default_options(options *o) {
    memset(o, 0, sizeof(*o));
    o->preset = &kPresets[0];
    o->tokens = 128;
    o->block_m = 16;
    o->seed = 1;
    o->specialization = ALPHAMOE_SPECIALIZATION_AUTO;
    o->repeat = 100;
}

/* ------------------------------------------------------------------ */
/* Output buffers                                                      */
/* ------------------------------------------------------------------ */

/* One set of route outputs; the pointers are host or device memory
 * depending on who allocated the set. */
typedef struct output_set {
    int32_t *topk_ids;
    float *topk_weights;
    int32_t *sorted_token_ids;
    int32_t *expert_ids;
    int32_t *num_tokens_post_padded;
    int32_t *expert_counts;
    int32_t *expert_offsets;
} output_set;

#define OUTPUT_COUNT 7

typedef struct buffer_slot {
    void **ptr;
    size_t bytes;
} buffer_slot;

/* Zero-sized outputs (M == 0) still get a few bytes: the required
 * pointers must not be NULL even when nothing is written through them. */
static size_t alloc_bytes(int64_t bytes) { return bytes > 4 ? (size_t)bytes : 4; }

static void output_slots(output_set *s, const alphamoe_sizes *z, buffer_slot slots[OUTPUT_COUNT]) {
    slots[0] = (buffer_slot){(void **)&s->topk_ids, alloc_bytes(z->topk_ids.bytes)};
    slots[1] = (buffer_slot){(void **)&s->topk_weights, alloc_bytes(z->topk_weights.bytes)};
    slots[2] = (buffer_slot){(void **)&s->sorted_token_ids, alloc_bytes(z->sorted_token_ids.bytes)};
    slots[3] = (buffer_slot){(void **)&s->expert_ids, alloc_bytes(z->expert_ids.bytes)};
    slots[4] = (buffer_slot){(void **)&s->num_tokens_post_padded, alloc_bytes(z->num_tokens_post_padded.bytes)};
    slots[5] = (buffer_slot){(void **)&s->expert_counts, alloc_bytes(z->expert_counts.bytes)};
    slots[6] = (buffer_slot){(void **)&s->expert_offsets, alloc_bytes(z->expert_offsets.bytes)};
}

static int host_outputs_alloc(output_set *s, const alphamoe_sizes *z) {
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(s, z, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i) {
        *slots[i].ptr = calloc(slots[i].bytes, 1);
        if (*slots[i].ptr == NULL) {
            fprintf(stderr, PROG ": out of host memory (%zu bytes)\n", slots[i].bytes);
            return -1;
        }
    }
    return 0;
}

static void host_outputs_free(output_set *s) {
    free(s->topk_ids);
    free(s->topk_weights);
    free(s->sorted_token_ids);
    free(s->expert_ids);
    free(s->num_tokens_post_padded);
    free(s->expert_counts);
    free(s->expert_offsets);
    memset(s, 0, sizeof(*s));
}

static alphamoe_buffers buffers_for(const output_set *s, const alphamoe_sizes *z, void *workspace,
                                    size_t workspace_bytes) {
    alphamoe_buffers b;
    memset(&b, 0, sizeof(b));
    b.struct_size = sizeof(b);
    b.topk_ids = s->topk_ids;
    b.topk_weights = s->topk_weights;
    b.sorted_token_ids = s->sorted_token_ids;
    b.expert_ids = s->expert_ids;
    b.num_tokens_post_padded = s->num_tokens_post_padded;
    b.expert_counts = s->expert_counts;
    b.expert_offsets = s->expert_offsets;
    b.sorted_token_ids_capacity = z->sorted_token_ids.elements;
    b.expert_ids_capacity = z->expert_ids.elements;
    b.workspace = workspace;
    b.workspace_bytes = workspace_bytes;
    return b;
}

/* ------------------------------------------------------------------ */
/* Session state                                                       */
/* ------------------------------------------------------------------ */

typedef struct session {
    options opt;
    float *logits; /* host, [M, E] */
    alphamoe_router *router;
    alphamoe_params params; /* as the router normalized them */
    alphamoe_sizes sizes;
    output_set reference; /* alphamoe_route_host */
    output_set gpu;       /* alphamoe_route, copied back */
    double *samples;      /* per-call times, microseconds */
} session;

static void session_release(session *s) {
    free(s->logits);
    alphamoe_router_destroy(s->router);
    host_outputs_free(&s->reference);
    host_outputs_free(&s->gpu);
    free(s->samples);
    memset(s, 0, sizeof(*s));
}

#define AMOE_CHECK(call)                                                                       \
    do {                                                                                       \
        const alphamoe_status status_ = (call);                                                \
        if (status_ != ALPHAMOE_OK) {                                                          \
            fprintf(stderr, PROG ": %s failed: %s\n", #call, alphamoe_status_string(status_)); \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

#define CUDA_CHECK(call)                                                                            \
    do {                                                                                            \
        const cudaError_t error_ = (call);                                                          \
        if (error_ != cudaSuccess) {                                                                \
            fprintf(stderr, PROG ": %s failed: %s: %s\n", #call, cudaGetErrorName(error_),          \
                    cudaGetErrorString(error_));                                                    \
            return -1;                                                                              \
        }                                                                                           \
    } while (0)

static int64_t pair_count(const session *s) {
    return (int64_t)s->opt.tokens * s->params.top_k;
}

/* ------------------------------------------------------------------ */
/* Logits                                                              */
/* ------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1): 24 random bits are exactly what a float holds. */
static int random_logits(session *s) {
    const size_t n = (size_t)s->opt.tokens * (size_t)s->params.num_experts;
    s->logits = malloc((n > 0 ? n : 1) * sizeof(float));
    if (s->logits == NULL) {
        fprintf(stderr, PROG ": out of host memory for %zu logits\n", n);
        return -1;
    }
    uint64_t state = s->opt.seed;
    for (size_t i = 0; i < n; ++i)
        s->logits[i] = (float)(splitmix64(&state) >> 40) * 0x1.0p-23f - 1.0f;
    return 0;
}

/* Takes M and E from the file. Returns 0, EXIT_USAGE when the file
 * contradicts an explicit option, or 1 when it cannot be used. */
static int load_input(session *s) {
    options *o = &s->opt;
    char err[512];
    int64_t rows = 0, cols = 0;
    if (npy_read_f32_2d(o->input, &s->logits, &rows, &cols, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    if (cols == 0) {
        fprintf(stderr, PROG ": %s: rows have no experts (shape [%" PRId64 ", 0])\n", o->input, rows);
        return 1;
    }
    if (o->experts != 0 && cols != o->experts)
        return usage_error("%s has %" PRId64 " experts per row but --experts is %" PRId32, o->input, cols,
                           o->experts);
    if (o->tokens_given && rows != o->tokens)
        return usage_error("%s has %" PRId64 " tokens but --tokens is %" PRId32, o->input, rows, o->tokens);
    o->tokens = (int32_t)rows;
    o->experts = (int32_t)cols;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Router                                                              */
/* ------------------------------------------------------------------ */

/* Parameters the library rejects are argument errors of this command. */
static int create_router(session *s) {
    const options *o = &s->opt;
    alphamoe_params p;
    memset(&p, 0, sizeof(p));
    p.struct_size = sizeof(p);
    p.num_experts = o->experts ? o->experts : o->preset->experts;
    p.top_k = o->top_k ? o->top_k : o->preset->top_k;
    p.block_m = o->block_m;
    p.max_tokens = o->tokens;
    p.flags = o->flags;
    p.force_specialization = o->specialization;
    const alphamoe_status st = alphamoe_router_create(&p, &s->router);
    if (st != ALPHAMOE_OK)
        return usage_error("invalid routing parameters (E=%" PRId32 ", k=%" PRId32 ", block_m=%" PRId32
                           ", M=%" PRId32 "): %s",
                           p.num_experts, p.top_k, p.block_m, p.max_tokens, alphamoe_status_string(st));
    s->params.struct_size = sizeof(s->params);
    s->sizes.struct_size = sizeof(s->sizes);
    AMOE_CHECK(alphamoe_router_get_params(s->router, &s->params));
    AMOE_CHECK(alphamoe_router_sizes(s->router, &s->sizes));
    return 0;
}

/* ------------------------------------------------------------------ */
/* Reporting helpers                                                   */
/* ------------------------------------------------------------------ */

static const char *specialization_name(alphamoe_specialization s) {
    switch (s) {
    case ALPHAMOE_SPECIALIZATION_AUTO: return "auto";
    case ALPHAMOE_SPECIALIZATION_TINY: return "tiny";
    case ALPHAMOE_SPECIALIZATION_SMALL: return "small";
    case ALPHAMOE_SPECIALIZATION_LARGE: return "large";
    }
    return "unknown";
}

static void format_cc(int32_t cc, char *buf, size_t size) {
    snprintf(buf, size, "%" PRId32 ".%" PRId32, cc / 10, cc % 10);
}

static void format_image(int32_t image_arch, char *buf, size_t size) {
    if (image_arch == 0) snprintf(buf, size, "none");
    else snprintf(buf, size, "sm_%" PRId32 "a", image_arch);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int compare_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_timing(double *samples, int32_t n, const char *what) {
    qsort(samples, (size_t)n, sizeof(double), compare_double);
    const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    printf("time:           median %.2f us, min %.2f us over %" PRId32 " calls\n", median, samples[0], n);
    printf("                (%s)\n", what);
}

static void print_shape(const session *s) {
    const alphamoe_params *p = &s->params;
    char preset_note[64] = "";
    if (p->num_experts == s->opt.preset->experts && p->top_k == s->opt.preset->top_k)
        snprintf(preset_note, sizeof(preset_note), " (preset %s)", s->opt.preset->name);
    printf("shape:          %" PRId32 " tokens x %" PRId32 " experts, top-k %" PRId32 ", block_m %" PRId32 "%s%s%s\n",
           s->opt.tokens, p->num_experts, p->top_k, p->block_m,
           (p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) ? ", shared expert" : "",
           (p->flags & ALPHAMOE_FLAG_TAIL_FILL) ? ", tail fill" : "", preset_note);
    if (s->opt.input)
        printf("logits:         %s\n", s->opt.input);
    else
        printf("logits:         uniform random in [-1, 1), seed %" PRIu64 "\n", s->opt.seed);
}

/* ------------------------------------------------------------------ */
/* Host reference path                                                 */
/* ------------------------------------------------------------------ */

static int route_reference(session *s) {
    const alphamoe_buffers b = buffers_for(&s->reference, &s->sizes, NULL, 0);
    AMOE_CHECK(alphamoe_route_host(s->router, s->opt.tokens, s->logits, &b));
    return 0;
}

static int run_host_path(session *s) {
    printf("specialization: none (CPU reference)%s\n",
           s->opt.specialization != ALPHAMOE_SPECIALIZATION_AUTO ? "; --specialization applies to the GPU only"
                                                                 : "");
    for (int32_t i = 0; i < s->opt.repeat; ++i) {
        const double t0 = now_us();
        if (route_reference(s) != 0) return -1;
        s->samples[i] = now_us() - t0;
    }
    print_timing(s->samples, s->opt.repeat, "host wall-clock time of alphamoe_route_host");
    return 0;
}

/* ------------------------------------------------------------------ */
/* GPU path                                                            */
/* ------------------------------------------------------------------ */

typedef struct gpu_probe {
    bool usable;
    char why[512]; /* when not usable */
    char name[256];
    int32_t compute_capability;
    int32_t image_arch;
} gpu_probe;

/* Decides between the GPU and the host fallback. Returns 0 (see
 * p->usable), EXIT_USAGE for a device ordinal that does not exist, or -1. */
static int probe_gpu(int32_t device, gpu_probe *p) {
    memset(p, 0, sizeof(*p));
    int cuda_count = 0;
    const cudaError_t e = cudaGetDeviceCount(&cuda_count);
    if (e != cudaSuccess) {
        snprintf(p->why, sizeof(p->why), "cudaGetDeviceCount: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
        return 0;
    }
    if (cuda_count == 0) {
        snprintf(p->why, sizeof(p->why), "cudaGetDeviceCount reports no CUDA device");
        return 0;
    }
    int32_t lib_count = 0;
    const alphamoe_status st = alphamoe_device_count(&lib_count);
    if (st != ALPHAMOE_OK || lib_count == 0) {
        snprintf(p->why, sizeof(p->why), "alphamoe_device_count: %s",
                 st != ALPHAMOE_OK ? alphamoe_status_string(st) : "no CUDA device");
        return 0;
    }
    if (device >= cuda_count || device >= lib_count)
        return usage_error("--device %" PRId32 ": only %d CUDA device(s) visible", device, cuda_count);
    AMOE_CHECK(alphamoe_device_describe(device, p->name, sizeof(p->name), &p->compute_capability, &p->image_arch));
    if (p->image_arch == 0) {
        char cc[16];
        format_cc(p->compute_capability, cc, sizeof(cc));
        snprintf(p->why, sizeof(p->why), "device %" PRId32 " (%s, compute capability %s): %s", device, p->name, cc,
                 alphamoe_status_string(ALPHAMOE_ERROR_NO_IMAGE));
        return 0;
    }
    p->usable = true;
    return 0;
}

typedef struct gpu_state {
    cudaStream_t stream;
    cudaEvent_t start;
    cudaEvent_t stop;
    output_set out;
    float *logits;
    void *workspace;
    size_t workspace_bytes;
} gpu_state;

static void warn_cuda(const char *what, cudaError_t e) {
    if (e != cudaSuccess)
        fprintf(stderr, PROG ": warning: %s failed: %s: %s\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* Releases whatever was created; a failure here cannot change the
 * outcome any more, so it is only reported. */
static void gpu_release(gpu_state *g, const alphamoe_sizes *z) {
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(&g->out, z, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i)
        if (*slots[i].ptr) warn_cuda("cudaFree", cudaFree(*slots[i].ptr));
    if (g->logits) warn_cuda("cudaFree", cudaFree(g->logits));
    if (g->workspace) warn_cuda("cudaFree", cudaFree(g->workspace));
    if (g->start) warn_cuda("cudaEventDestroy", cudaEventDestroy(g->start));
    if (g->stop) warn_cuda("cudaEventDestroy", cudaEventDestroy(g->stop));
    if (g->stream) warn_cuda("cudaStreamDestroy", cudaStreamDestroy(g->stream));
    memset(g, 0, sizeof(*g));
}

static int gpu_use_device(int32_t device) {
    CUDA_CHECK(cudaSetDevice(device));
    return 0;
}

static int gpu_print_selection(const session *s) {
    alphamoe_device_attributes attrs;
    memset(&attrs, 0, sizeof(attrs));
    attrs.struct_size = sizeof(attrs);
    AMOE_CHECK(alphamoe_device_attributes_query(s->opt.device, &attrs));
    alphamoe_selection sel;
    memset(&sel, 0, sizeof(sel));
    sel.struct_size = sizeof(sel);
    AMOE_CHECK(alphamoe_router_select(s->router, s->opt.tokens, &attrs, &sel));
    char image[16];
    format_image(sel.image_arch, image, sizeof(image));
    printf("specialization: %s (%s): grid %" PRId32 " x %" PRId32 " threads%s, %" PRId32
           " tokens per CTA, image %s\n",
           specialization_name(sel.specialization),
           s->params.force_specialization != ALPHAMOE_SPECIALIZATION_AUTO ? "forced" : "chosen by the library",
           sel.grid_ctas, sel.block_threads, sel.cooperative ? ", cooperative" : "", sel.tokens_per_cta, image);
    return 0;
}

static int gpu_setup(const session *s, gpu_state *g) {
    const alphamoe_sizes *z = &s->sizes;
    CUDA_CHECK(cudaStreamCreate(&g->stream));
    CUDA_CHECK(cudaEventCreate(&g->start));
    CUDA_CHECK(cudaEventCreate(&g->stop));
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(&g->out, z, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i) CUDA_CHECK(cudaMalloc(slots[i].ptr, slots[i].bytes));
    g->workspace_bytes = alloc_bytes(z->workspace.bytes);
    CUDA_CHECK(cudaMalloc(&g->workspace, g->workspace_bytes));
    CUDA_CHECK(cudaMemset(g->workspace, 0, g->workspace_bytes));
    const size_t logits_bytes = (size_t)s->opt.tokens * (size_t)s->params.num_experts * sizeof(float);
    CUDA_CHECK(cudaMalloc((void **)&g->logits, alloc_bytes((int64_t)logits_bytes)));
    if (logits_bytes > 0) CUDA_CHECK(cudaMemcpy(g->logits, s->logits, logits_bytes, cudaMemcpyHostToDevice));
    return 0;
}

static int gpu_route(const session *s, const gpu_state *g, const alphamoe_buffers *b) {
    AMOE_CHECK(alphamoe_route(s->router, s->opt.tokens, g->logits, b, g->stream));
    return 0;
}

/* Each call is bracketed by its own pair of events, so a sample is what a
 * caller on the host observes for one call: launch overhead included. */
static int gpu_time(session *s, const gpu_state *g) {
    const alphamoe_buffers b = buffers_for(&g->out, &s->sizes, g->workspace, g->workspace_bytes);
    for (int i = 0; i < WARMUP_CALLS; ++i)
        if (gpu_route(s, g, &b) != 0) return -1;
    CUDA_CHECK(cudaStreamSynchronize(g->stream));
    for (int32_t i = 0; i < s->opt.repeat; ++i) {
        CUDA_CHECK(cudaEventRecord(g->start, g->stream));
        if (gpu_route(s, g, &b) != 0) return -1;
        CUDA_CHECK(cudaEventRecord(g->stop, g->stream));
        CUDA_CHECK(cudaEventSynchronize(g->stop));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, g->start, g->stop));
        s->samples[i] = (double)ms * 1000.0;
    }
    CUDA_CHECK(cudaStreamSynchronize(g->stream));
    print_timing(s->samples, s->opt.repeat,
                 "host-observed cudaEvent time around each call, launch included; not kernel time");
    return 0;
}

static int gpu_download(session *s, gpu_state *g) {
    buffer_slot dev[OUTPUT_COUNT], host[OUTPUT_COUNT];
    output_slots(&g->out, &s->sizes, dev);
    output_slots(&s->gpu, &s->sizes, host);
    for (int i = 0; i < OUTPUT_COUNT; ++i)
        CUDA_CHECK(cudaMemcpy(*host[i].ptr, *dev[i].ptr, host[i].bytes, cudaMemcpyDeviceToHost));
    /* With no tokens the call writes only the live length; the statistics
     * must not read the never-written device memory behind the rest. */
    if (s->opt.tokens == 0) {
        memset(s->gpu.expert_counts, 0, (size_t)s->params.num_experts * sizeof(int32_t));
        memset(s->gpu.expert_offsets, 0, ((size_t)s->params.num_experts + 1) * sizeof(int32_t));
    }
    return 0;
}

static int run_gpu_path(session *s) {
    gpu_state g;
    memset(&g, 0, sizeof(g));
    int rc = host_outputs_alloc(&s->gpu, &s->sizes);
    if (rc == 0) rc = gpu_use_device(s->opt.device);
    if (rc == 0) rc = gpu_print_selection(s);
    if (rc == 0) rc = gpu_setup(s, &g);
    if (rc == 0) rc = gpu_time(s, &g);
    if (rc == 0) rc = gpu_download(s, &g);
    gpu_release(&g, &s->sizes);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Self-check against the host reference                               */
/* ------------------------------------------------------------------ */

/* Index of the first difference, or -1. */
static int64_t first_difference(const int32_t *a, const int32_t *b, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return i;
    return -1;
}

/* Compares ids and plan bitwise; entries the contract leaves unwritten
 * (past the live length without tail fill) are not compared. Prints the
 * first mismatch. */
static bool ids_and_plan_equal(const session *s) {
    const output_set *r = &s->reference, *g = &s->gpu;
    const int64_t pairs = pair_count(s);
    const int32_t bm = s->params.block_m, E = s->params.num_experts;
    const bool tail = (s->params.flags & ALPHAMOE_FLAG_TAIL_FILL) != 0 && pairs > 0;
    const int64_t live = *r->num_tokens_post_padded;
    const int64_t sorted_n = tail ? s->sizes.sorted_token_ids.elements : live;
    const int64_t blocks_n = tail ? s->sizes.expert_ids.elements : live / bm;
    const struct {
        const char *name;
        const int32_t *ref, *got;
        int64_t n;
    } fields[] = {
        {"num_tokens_post_padded", r->num_tokens_post_padded, g->num_tokens_post_padded, 1},
        {"topk_ids", r->topk_ids, g->topk_ids, pairs},
        {"sorted_token_ids", r->sorted_token_ids, g->sorted_token_ids, sorted_n},
        {"expert_ids", r->expert_ids, g->expert_ids, blocks_n},
        {"expert_counts", r->expert_counts, g->expert_counts, pairs > 0 ? E : 0},
        {"expert_offsets", r->expert_offsets, g->expert_offsets, pairs > 0 ? E + 1 : 0},
    };
    for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); ++f) {
        const int64_t at = first_difference(fields[f].ref, fields[f].got, fields[f].n);
        if (at >= 0) {
            printf("                first difference: %s[%" PRId64 "] = %" PRId32 ", host reference %" PRId32 "\n",
                   fields[f].name, at, fields[f].got[at], fields[f].ref[at]);
            return false;
        }
    }
    return true;
}

static double max_weight_difference(const session *s) {
    double worst = 0.0;
    const int64_t pairs = pair_count(s);
    for (int64_t i = 0; i < pairs; ++i) {
        const double d = fabs((double)s->gpu.topk_weights[i] - (double)s->reference.topk_weights[i]);
        if (!(d <= worst)) worst = d; /* a NaN sticks */
    }
    return worst;
}

static bool check_against_reference(const session *s) {
    const bool equal = ids_and_plan_equal(s);
    const double diff = max_weight_difference(s);
    const bool weights_ok = diff <= WEIGHT_TOLERANCE;
    printf("self-check:     ids and plan bitwise equal to alphamoe_route_host: %s;\n"
           "                max |weight - reference weight| = %.3g (allowed %.0e)\n",
           equal ? "yes" : "no", diff, WEIGHT_TOLERANCE);
    printf("matches host reference: %s\n", equal && weights_ok ? "yes" : "no");
    return equal && weights_ok;
}

/* ------------------------------------------------------------------ */
/* Load statistics                                                     */
/* ------------------------------------------------------------------ */

typedef struct expert_load {
    int32_t expert;
    int32_t count;
} expert_load;

/* Most loaded first; equal loads by lower id, so the list is stable. */
static int compare_load(const void *a, const void *b) {
    const expert_load *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return (x->expert > y->expert) - (x->expert < y->expert);
}

static int print_top_loaded(const int32_t *counts, int32_t E) {
    expert_load *loads = malloc((size_t)E * sizeof(*loads));
    if (loads == NULL) {
        fprintf(stderr, PROG ": out of host memory\n");
        return -1;
    }
    for (int32_t e = 0; e < E; ++e) loads[e] = (expert_load){e, counts[e]};
    qsort(loads, (size_t)E, sizeof(*loads), compare_load);
    printf("most loaded:    ");
    for (int32_t i = 0; i < E && i < TOP_LOADED && loads[i].count > 0; ++i)
        printf("%s#%" PRId32 ": %" PRId32, i ? ", " : "", loads[i].expert, loads[i].count);
    printf("%s\n", loads[0].count > 0 ? " (expert #: pairs)" : "none (no pairs)");
    free(loads);
    return 0;
}

static void print_padding(const session *s, const output_set *r) {
    const int64_t pairs = pair_count(s);
    const int64_t live = *r->num_tokens_post_padded;
    const int64_t capacity = s->sizes.sorted_token_ids.elements;
    if (pairs > 0)
        printf("padding:        %" PRId64 " sentinel slots for %" PRId64 " pairs: %.2f%% overhead\n", live - pairs,
               pairs, 100.0 * (double)(live - pairs) / (double)pairs);
    else
        printf("padding:        no pairs, no padding\n");
    printf("plan length:    num_tokens_post_padded %" PRId64 " of capacity %" PRId64 " (%.1f%% used)\n", live,
           capacity, capacity > 0 ? 100.0 * (double)live / (double)capacity : 0.0);
}

static int print_load(const session *s, const output_set *r) {
    const int32_t E = s->params.num_experts;
    int32_t lo = INT32_MAX, hi = 0, empty = 0;
    int64_t total = 0;
    for (int32_t e = 0; e < E; ++e) {
        const int32_t c = r->expert_counts[e];
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        empty += c == 0;
        total += c;
    }
    printf("pairs/expert:   min %" PRId32 ", mean %.2f, max %" PRId32 " (%" PRId64 " pairs over %" PRId32
           " experts)\n",
           lo, (double)total / E, hi, total, E);
    printf("empty experts:  %" PRId32 " of %" PRId32 "\n", empty, E);
    if (print_top_loaded(r->expert_counts, E) != 0) return -1;
    print_padding(s, r);
    return 0;
}

/* ------------------------------------------------------------------ */
/* .npy output                                                         */
/* ------------------------------------------------------------------ */

static int ensure_directory(const char *dir) {
    if (mkdir(dir, 0777) == 0) return 0;
    struct stat st;
    if (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    fprintf(stderr, PROG ": cannot create output directory %s: %s\n", dir,
            errno == EEXIST ? "exists and is not a directory" : strerror(errno));
    return -1;
}

static int write_one(const char *dir, const char *name, npy_dtype dtype, const void *data, int ndim,
                     int64_t d0, int64_t d1) {
    char path[4096];
    const int n = snprintf(path, sizeof(path), "%s/%s.npy", dir, name);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        fprintf(stderr, PROG ": output path %s/%s.npy is too long\n", dir, name);
        return -1;
    }
    const int64_t shape[2] = {d0, d1};
    char err[512];
    if (npy_write(path, dtype, data, ndim, shape, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return -1;
    }
    return 0;
}

static int write_outputs(const session *s, const output_set *r) {
    const char *dir = s->opt.output;
    const int64_t M = s->opt.tokens, k = s->params.top_k, E = s->params.num_experts;
    const int64_t live = *r->num_tokens_post_padded;
    if (ensure_directory(dir) != 0) return -1;
    if (write_one(dir, "topk_ids", NPY_DTYPE_INT32, r->topk_ids, 2, M, k) != 0 ||
        write_one(dir, "topk_weights", NPY_DTYPE_FLOAT32, r->topk_weights, 2, M, k) != 0 ||
        write_one(dir, "sorted_token_ids", NPY_DTYPE_INT32, r->sorted_token_ids, 1, live, 0) != 0 ||
        write_one(dir, "expert_ids", NPY_DTYPE_INT32, r->expert_ids, 1, live / s->params.block_m, 0) != 0 ||
        write_one(dir, "expert_counts", NPY_DTYPE_INT32, r->expert_counts, 1, E, 0) != 0 ||
        write_one(dir, "expert_offsets", NPY_DTYPE_INT32, r->expert_offsets, 1, E + 1, 0) != 0)
        return -1;
    printf("outputs:        written to %s/\n", dir);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Driver                                                              */
/* ------------------------------------------------------------------ */

static void print_header(const session *s, const gpu_probe *probe) {
    printf(PROG ": AlphaMoE router %s\n", alphamoe_version_string());
    if (alphamoe_version_number() != ALPHAMOE_VERSION_NUMBER)
        fprintf(stderr, PROG ": warning: built against header %s but running library %s\n", ALPHAMOE_VERSION_STRING,
                alphamoe_version_string());
    if (probe->usable) {
        char cc[16], image[16];
        format_cc(probe->compute_capability, cc, sizeof(cc));
        format_image(probe->image_arch, image, sizeof(image));
        printf("device:         %" PRId32 ": %s (compute capability %s, kernel image %s)\n", s->opt.device,
               probe->name, cc, image);
    } else {
        printf("device:         host reference (CPU)\n");
    }
    print_shape(s);
}

/* Fills the session up to the point where routing can start. */
static int prepare(session *s) {
    int rc = 0;
    if (s->opt.input) {
        rc = load_input(s);
        if (rc != 0) return rc;
    }
    rc = create_router(s);
    if (rc != 0) return rc == EXIT_USAGE ? rc : 1;
    if (!s->opt.input && random_logits(s) != 0) return 1;
    s->samples = malloc((size_t)s->opt.repeat * sizeof(double));
    if (s->samples == NULL || host_outputs_alloc(&s->reference, &s->sizes) != 0) {
        if (s->samples == NULL) fprintf(stderr, PROG ": out of host memory\n");
        return 1;
    }
    return 0;
}

static int choose_path(const session *s, gpu_probe *probe) {
    memset(probe, 0, sizeof(*probe));
    if (s->opt.host) return 0;
    const int rc = probe_gpu(s->opt.device, probe);
    if (rc != 0) return rc == EXIT_USAGE ? rc : 1;
    if (!probe->usable)
        printf(PROG ": no usable GPU (%s); running the host reference instead\n", probe->why);
    return 0;
}

static int run(session *s) {
    int rc = prepare(s);
    if (rc != 0) return rc;
    gpu_probe probe;
    rc = choose_path(s, &probe);
    if (rc != 0) return rc;
    print_header(s, &probe);

    const output_set *shown = &s->reference;
    bool matches = true;
    if (probe.usable) {
        if (run_gpu_path(s) != 0 || route_reference(s) != 0) return 1;
        matches = check_against_reference(s);
        shown = &s->gpu;
    } else if (run_host_path(s) != 0) {
        return 1;
    }
    if (print_load(s, shown) != 0) return 1;
    if (s->opt.output && write_outputs(s, shown) != 0) return 1;
    if (!matches) {
        fprintf(stderr, PROG ": the GPU results differ from the host reference\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    session s;
    memset(&s, 0, sizeof(s));
    default_options(&s.opt);
    const int parsed = parse_args(argc, argv, &s.opt);
    if (parsed == PARSE_HELP) {
        print_usage(stdout);
        return 0;
    }
    if (parsed != 0) return parsed;
    const int rc = run(&s);
    session_release(&s);
    return rc;
}
