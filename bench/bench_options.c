#include "bench_options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench_check.h"
#include "options.h"

void print_bench_usage(FILE *f) {
    fprintf(f,
            "usage: " BENCH_PROG " [options]\n"
            "\n"
            "Kernel time of the AlphaMoE router from the CUPTI activity API: every sample\n"
            "is the sum of its kernel durations, with L2 evicted by a memset before it.\n"
            "Prints, per shape, the median of the round medians and their spread, the\n"
            "per-call time in a CUDA graph of 100 back-to-back calls, the floor that bounds\n"
            "the shape (one row read, eight rows, one grid barrier, or logits bytes at the\n"
            "memory rate) and the target; then the programmatic-dependent-launch gain.\n"
            "Every configuration is checked against the CPU reference before it is timed.\n"
            "\n"
            "  --shapes LIST     comma list of shape names (e512-m1-k10-bm8, e512-m1-k10-bm8-shared,\n"
            "                    ...) or indices as --list prints them, or \"all\" (default)\n"
            "  --list            print the shapes with their index and target, and exit\n"
            "  --sweep           per shape family of the selected shapes, every specialization\n"
            "                    forced at M = 1 .. 16384, and the best per M\n"
            "  --entries         per selected shape and a grid of row widths, batch sizes and\n"
            "                    routings, every entry point that can run it against the\n"
            "                    library's choice: whether each entry point earns its place\n"
            "  --rounds N        rounds per shape (default 5; sweep and entries 3; quick 2)\n"
            "  --samples N       samples per round (default 30; sweep and entries 10; quick 5)\n"
            "  --warmup N        untimed samples first (default 10; sweep and entries 3; quick 2)\n"
            "  --graph-replays N timed replays of the 100-call graph (default 10; quick 3)\n"
            "  --quick           short pass for tests: the sampling above, a shorter sweep grid\n"
            "  --cold-code       after each L2 eviction, a kernel runs 512 KiB of straight-line code\n"
            "                    on every SM, so each sample also fetches its code from memory, as\n"
            "                    in a serving engine where other kernels run between router calls\n"
            "  --with-cold-code  the shape table measured both ways: each shape's kernel time\n"
            "                    also with --cold-code's eviction (the cold code column)\n"
            "  --csv FILE        write the results as CSV\n"
            "  --json FILE       write the results as JSON\n"
            "  --markdown FILE   write the tables as GitHub Markdown (the documentation's tables)\n"
            "  --seed S          seed of the random logits (default 1)\n"
            "  --arena-offset-kib N  the timed call's buffers (the logits first) and the row\n"
            "                    floors' rows start N KiB into the benchmark's device memory (default\n"
            "                    0, every build the same addresses): cold reads take longer from\n"
            "                    some 4 KiB granules than from others, so this measures both (N is\n"
            "                    rounded up to a multiple of 4)\n"
            "  --device N        CUDA device ordinal (default 0)\n"
            "  --help            show this text\n"
            "\n"
            "Without a usable GPU it says so and exits 77.\n");
}

static int usage(const char *fmt, const char *arg) {
    fprintf(stderr, BENCH_PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n");
    print_bench_usage(stderr);
    return EXIT_USAGE;
}

static bool parse_count(const char *text, int32_t lo, int32_t hi, int32_t *out) {
    long long v = 0;
    if (!parse_integer(text, lo, hi, &v)) return false;
    *out = (int32_t)v;
    return true;
}

static int set_counted(const char *name, const char *value, bench_options *o) {
    struct {
        const char *name;
        int32_t *field;
        int32_t lo, hi;
    } counted[] = {
        {"--rounds", &o->rounds, 1, 1000},        {"--samples", &o->samples, 1, 100000},
        {"--warmup", &o->warmup, 0, 100000},      {"--graph-replays", &o->graph_replays, 1, 10000},
        {"--device", &o->device, 0, 1023},        {"--arena-offset-kib", &o->arena_offset_kib, 0, 65536},
    };
    for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); ++i) {
        if (strcmp(name, counted[i].name) != 0) continue;
        if (!parse_count(value, counted[i].lo, counted[i].hi, counted[i].field))
            return usage("bad value for %s", name);
        return 0;
    }
    return 1; /* not a counted option */
}

static int set_valued(const char *name, const char *value, bench_options *o) {
    if (strcmp(name, "--shapes") == 0) o->shapes = value;
    else if (strcmp(name, "--csv") == 0) o->csv_path = value;
    else if (strcmp(name, "--json") == 0) o->json_path = value;
    else if (strcmp(name, "--markdown") == 0) o->markdown_path = value;
    else if (strcmp(name, "--seed") == 0) {
        if (!parse_u64(value, &o->seed)) return usage("bad value for %s", name);
    } else
        return set_counted(name, value, o);
    return 0;
}

static int set_flag(const char *name, bench_options *o) {
    if (strcmp(name, "--quick") == 0) o->quick = true;
    else if (strcmp(name, "--sweep") == 0) o->sweep = true;
    else if (strcmp(name, "--entries") == 0) o->entries = true;
    else if (strcmp(name, "--cold-code") == 0) o->cold_code = true;
    else if (strcmp(name, "--with-cold-code") == 0) o->with_cold_code = true;
    else if (strcmp(name, "--list") == 0) o->list = true;
    else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) return PARSE_HELP;
    else return 1;
    return 0;
}

static bool takes_value(const char *name) {
    static const char *const kValued[] = {"--shapes",   "--csv",     "--json",   "--markdown",
                                          "--seed",     "--rounds",  "--samples", "--warmup",
                                          "--graph-replays", "--device", "--arena-offset-kib"};
    for (size_t i = 0; i < sizeof(kValued) / sizeof(kValued[0]); ++i)
        if (strcmp(name, kValued[i]) == 0) return true;
    return false;
}

int parse_bench_args(int argc, char **argv, bench_options *o) {
    memset(o, 0, sizeof(*o));
    o->warmup = -1;
    o->seed = 1;
    for (int i = 1; i < argc; ++i) {
        char name[64];
        const char *value = NULL;
        if (!option_split(argv[i], name, sizeof(name), &value)) return usage("unknown option %s", argv[i]);
        if (value == NULL) {
            const int flag = set_flag(name, o);
            if (flag == PARSE_HELP) return PARSE_HELP;
            if (flag == 0) continue;
            if (!takes_value(name)) return usage("unknown option %s", name);
            if (i + 1 >= argc) return usage("%s needs a value", name);
            value = argv[++i];
        }
        const int rc = set_valued(name, value, o);
        if (rc == 1) return usage("unknown option %s", name);
        if (rc != 0) return rc;
    }
    if (o->with_cold_code && (o->cold_code || o->sweep || o->entries))
        return usage("%s", "--with-cold-code measures the shape table: not with --cold-code, --sweep or --entries");
    if (o->sweep && o->entries) return usage("%s", "--sweep and --entries are separate runs");
    return 0;
}

shape_run_plan resolve_plan(const bench_options *o) {
    shape_run_plan p;
    if (o->quick) p.sampling = (sampling_plan){2, 2, 5};
    else if (o->sweep || o->entries) p.sampling = (sampling_plan){3, 3, 10};
    else p.sampling = (sampling_plan){10, 5, 30};
    p.graph_replays = o->quick ? 3 : 10;
    if (o->warmup >= 0) p.sampling.warmup = o->warmup;
    if (o->rounds > 0) p.sampling.rounds = o->rounds;
    if (o->samples > 0) p.sampling.samples = o->samples;
    if (o->graph_replays > 0) p.graph_replays = o->graph_replays;
    p.seed = o->seed;
    p.with_cold_code = o->with_cold_code;
    return p;
}
