/*
 * alphamoe-route: routes one batch of router logits through the public C
 * API, times the call, checks the GPU against the library's own CPU
 * reference and prints how the load spreads over the experts.
 *
 * Only the public header and the CUDA runtime are used, so the tool is
 * also a worked example of driving the library from C.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alphamoe/router_diagnostics.h"
#include "cli_options.h"
#include "gpu_session.h"
#include "load_report.h"
#include "route_session.h"

const char *tool_prog = PROG;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void print_flavour(const session *s) {
    const alphamoe_params *p = &s->route.params;
    const char *scoring = scoring_text(p->scoring);
    const bool bias = (p->flags & ALPHAMOE_FLAG_CORRECTION_BIAS) != 0;
    const char *bias_text = !bias          ? ""
                            : s->file_bias ? " with the correction bias of "
                                           : " with a random correction bias in [-0.1, 0.1)";
    const char *unrenormalized = p->scoring == ALPHAMOE_SCORING_SOFTMAX ? "full-row probabilities"
                                 : p->scoring == ALPHAMOE_SCORING_SIGMOID ? "weights sigmoid(logit)"
                                                                          : "weights sqrt(softplus(logit))";
    printf("routing:        %s%s%s, %s", scoring, bias_text, bias && s->file_bias ? s->opt.bias_file : "",
           (p->flags & ALPHAMOE_FLAG_NO_RENORMALIZE) ? unrenormalized : "renormalized over the chosen experts");
    if (p->num_groups > 1) printf(", %" PRId32 " groups keep %" PRId32, p->num_groups, p->topk_groups);
    if (p->routed_scaling_factor != 1.0f) printf(", scaled by %g", (double)p->routed_scaling_factor);
    printf("; logits %s\n", logits_type_name(p->logits_type));
    if (p->flags & ALPHAMOE_FLAG_HASH_ROUTING)
        printf("hash routing:   experts from a random table of %" PRId32 " token ids, random token ids (seed %" PRIu64
               ")\n", p->vocab_size, s->opt.seed);
    if ((p->flags & ALPHAMOE_FLAG_EXPERT_MAP) && s->file_map)
        printf("expert parallel: expert map of %" PRId32 " local experts from %s\n", p->local_expert_count,
               s->opt.map_file);
    else if (p->flags & ALPHAMOE_FLAG_EXPERT_MAP)
        printf("expert parallel: expert map of %" PRId32 " random local experts (seed %" PRIu64 ")\n",
               p->local_expert_count, s->opt.seed);
    else if (p->local_expert_count != p->num_experts)
        printf("expert parallel: local experts [%" PRId32 ", %" PRId32 ")\n", p->local_expert_begin,
               p->local_expert_begin + p->local_expert_count);
}

static void print_shape(const session *s) {
    const alphamoe_params *p = &s->route.params;
    char preset_note[64] = "";
    if (p->num_experts == s->opt.preset->experts && p->top_k == s->opt.preset->top_k)
        snprintf(preset_note, sizeof(preset_note), " (preset %s)", s->opt.preset->name);
    printf("shape:          %" PRId32 " tokens x %" PRId32 " experts, top-k %" PRId32 ", block_m %" PRId32 "%s%s%s\n",
           s->opt.tokens, p->num_experts, p->top_k, p->block_m,
           (p->flags & ALPHAMOE_FLAG_SHARED_EXPERT) ? ", shared expert" : "",
           (p->flags & ALPHAMOE_FLAG_TAIL_FILL) ? ", tail fill" : "", preset_note);
    print_flavour(s);
    if (s->opt.input)
        printf("logits:         %s\n", s->opt.input);
    else
        printf("logits:         uniform random in [-1, 1), seed %" PRIu64 "\n", s->opt.seed);
}

/* Calls without --repeat: 100 on the GPU; on the CPU, whose calls can
 * take seconds, as many as fit in about a second, still at most 100. */
#define DEFAULT_REPEAT 100
#define HOST_REPEAT_US 1e6
/* A run expected to last longer than this says so on stderr, and then
 * how far it is every PROGRESS_EVERY_US. */
#define PROGRESS_AFTER_US 2e6
#define PROGRESS_EVERY_US 2e6

typedef struct progress {
    bool announced;
    double last_us; /* elapsed at the last line */
} progress;

static void print_left(double us) {
    if (us >= 120e6) fprintf(stderr, "%.0f min", us / 60e6);
    else fprintf(stderr, us >= 10e6 ? "%.0f s" : "%.1f s", us / 1e6);
}

/* After `done` of `total` calls, `elapsed` microseconds in. */
static void report_progress(progress *pr, double elapsed, int32_t done, int32_t total) {
    const double left = elapsed / done * (total - done);
    if (!pr->announced) {
        if (elapsed + left < PROGRESS_AFTER_US) return;
        fprintf(stderr, PROG ": %" PRId32 " calls of the CPU reference, %.2f s each: about ", total,
                elapsed / done / 1e6);
        print_left(elapsed + left);
        fprintf(stderr, " in all\n");
    } else {
        if (elapsed - pr->last_us < PROGRESS_EVERY_US) return;
        fprintf(stderr, PROG ": %" PRId32 " of %" PRId32 " calls done, about ", done, total);
        print_left(left);
        fprintf(stderr, " left\n");
    }
    pr->announced = true;
    pr->last_us = elapsed;
}

static int run_host_path(session *s) {
    printf("specialization: none (CPU reference)\n");
    fflush(stdout); /* before the progress lines on stderr */
    const bool until_time = s->opt.repeat == 0;
    const int32_t most = until_time ? DEFAULT_REPEAT : s->opt.repeat;
    progress pr = {false, 0.0};
    const double start = now_us();
    int32_t done = 0;
    while (done < most) {
        const double t0 = now_us();
        if (route_reference(s) != 0) return -1;
        const double t1 = now_us();
        s->samples[done++] = t1 - t0;
        if (until_time && t1 - start >= HOST_REPEAT_US) break;
        if (!until_time && done < most) report_progress(&pr, t1 - start, done, most);
    }
    print_timing(s->samples, done, "host wall-clock time of alphamoe_route_host");
    return 0;
}

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

/* Reads the files and creates the router: every argument checked before
 * any long work starts. */
static int prepare(session *s) {
    int rc = 0;
    if (s->opt.output && prepare_output_dir(s->opt.output) != 0) return 1;
    if (s->opt.input && (rc = load_input(s)) != 0) return rc;
    if ((rc = load_bias_and_map(s)) != 0) return rc;
    rc = create_router(s);
    return rc == 0 || rc == EXIT_USAGE ? rc : 1;
}

/* The inputs and the host outputs. */
static int allocate(session *s) {
    if (make_inputs(s) != 0) return 1;
    const int32_t samples = s->opt.repeat > 0 ? s->opt.repeat : DEFAULT_REPEAT;
    s->samples = malloc((size_t)samples * sizeof(double));
    if (s->samples == NULL || host_outputs_alloc(&s->reference, &s->route.sizes, SESSION_OUTPUTS, 0) != 0) {
        fprintf(stderr, PROG ": out of host memory\n");
        return 1;
    }
    return 0;
}

/* Options that only a GPU run reads are refused rather than ignored. */
static int refuse_gpu_options(const session *s, const char *why) {
    if (s->opt.specialization != ALPHAMOE_SPECIALIZATION_AUTO) {
        const char *name = alphamoe_specialization_name(s->opt.specialization);
        return arg_error("--specialization %s chooses a GPU kernel, and there is none to run: %s", name ? name : "",
                         why);
    }
    if (s->opt.device_given)
        return arg_error("--device %" PRId32 " chooses a GPU, and there is none to run: %s", s->opt.device, why);
    return 0;
}

static int choose_path(const session *s, gpu_probe *probe) {
    memset(probe, 0, sizeof(*probe));
    if (s->opt.host) return 0; /* --host with GPU options is refused by parse_args */
    int rc = probe_gpu(s->opt.device, probe);
    if (rc != 0) return rc == EXIT_USAGE ? rc : 1;
    const bool device_found = probe->usable;
    if (check_gpu_flavour(s, probe) != 0) return 1;
    if (probe->usable) return 0;
    if ((rc = refuse_gpu_options(s, probe->why)) != 0) return rc;
    printf(PROG ": %s%s; running the host reference instead\n", device_found ? "" : "no usable GPU: ", probe->why);
    return 0;
}

static int run(session *s) {
    int rc = prepare(s);
    if (rc != 0) return rc;
    gpu_probe probe;
    if ((rc = choose_path(s, &probe)) != 0) return rc;
    if ((rc = allocate(s)) != 0) return rc;
    print_header(s, &probe);

    const output_set *shown = &s->reference;
    bool matches = true;
    if (probe.usable) {
        if (s->opt.repeat == 0) s->opt.repeat = DEFAULT_REPEAT;
        if (run_gpu_path(s, &matches) != 0) return 1;
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

/* The kernel images the library holds, over all its kernels. */
static int print_images(void) {
    int32_t seen[16];
    int32_t n = 0;
    for (int32_t k = 0; k < alphamoe_kernel_count(); ++k) {
        int32_t archs[16], count = 0;
        ROUTER_TRY(alphamoe_kernel_images(k, archs, 16, &count));
        for (int32_t i = 0; i < count && i < 16; ++i) {
            int32_t j = 0;
            while (j < n && seen[j] < archs[i]) ++j;
            if ((j < n && seen[j] == archs[i]) || n == 16) continue;
            memmove(seen + j + 1, seen + j, (size_t)(n - j) * sizeof(int32_t));
            seen[j] = archs[i];
            ++n;
        }
    }
    printf("kernel images:  ");
    for (int32_t i = 0; i < n; ++i) {
        char image[16];
        format_image(seen[i], image, sizeof(image));
        printf("%s%s", i ? ", " : "", image);
    }
    printf("%s\n", n ? "" : "none");
    return 0;
}

static int print_version(void) {
    printf(PROG " %s\n", ALPHAMOE_VERSION_STRING);
    printf("library:        AlphaMoE router %s%s\n", alphamoe_version_string(),
           alphamoe_version_number() != ALPHAMOE_VERSION_NUMBER ? " (this tool was built against another version)"
                                                               : "");
    return print_images() == 0 ? 0 : 1;
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
    if (parsed == PARSE_VERSION) return print_version();
    if (parsed != 0) return parsed;
    const int rc = run(&s);
    session_release(&s);
    return rc;
}
