#define _POSIX_C_SOURCE 200809L

#include "load_report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"

#define TOP_LOADED 5

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

/* pairs: those in the plan (all M*k, or the local ones under expert
 * parallelism). */
static void print_padding(const session *s, const output_set *r, int64_t pairs) {
    const int64_t live = *r->num_tokens_post_padded;
    const int64_t capacity = s->route.sizes.sorted_token_ids.elements;
    if (pairs > 0)
        printf("padding:        %" PRId64 " sentinel slots for %" PRId64 " pairs: %.2f%% overhead\n", live - pairs,
               pairs, 100.0 * (double)(live - pairs) / (double)pairs);
    else
        printf("padding:        no pairs, no padding\n");
    printf("plan length:    num_tokens_post_padded %" PRId64 " of capacity %" PRId64 " (%.1f%% used)\n", live,
           capacity, capacity > 0 ? 100.0 * (double)live / (double)capacity : 0.0);
}

int print_load(const session *s, const output_set *r) {
    /* The plan's experts: the local ones under expert parallelism, where
     * pairs of other ranks are in no count. */
    const int32_t E = plan_experts(s);
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
           " %sexperts)\n",
           lo, (double)total / E, hi, total, E, E != s->route.params.num_experts ? "local " : "");
    printf("empty experts:  %" PRId32 " of %" PRId32 "\n", empty, E);
    if (print_top_loaded(r->expert_counts, E) != 0) return -1;
    print_padding(s, r, total);
    return 0;
}

int prepare_output_dir(const char *dir) {
    struct stat st;
    const bool created = mkdir(dir, 0777) == 0;
    const int why = errno;
    if (!created && !(why == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))) {
        fprintf(stderr, PROG ": --output %s: cannot create the directory: %s\n", dir,
                why == EEXIST ? "a file of that name exists" : strerror(why));
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, PROG ": --output %s: the directory is not writable: %s\n", dir, strerror(errno));
        return -1;
    }
    return 0;
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

int write_outputs(const session *s, const output_set *r) {
    const char *dir = s->opt.output;
    const int64_t M = s->opt.tokens, k = s->route.params.top_k, E = plan_experts(s);
    const int64_t live = *r->num_tokens_post_padded;
    const int64_t all = s->route.params.num_experts;
    if (write_one(dir, "topk_ids", NPY_DTYPE_INT32, r->topk_ids, 2, M, k) != 0 ||
        write_one(dir, "topk_weights", NPY_DTYPE_FLOAT32, r->topk_weights, 2, M, k) != 0 ||
        write_one(dir, "sorted_token_ids", NPY_DTYPE_INT32, r->sorted_token_ids, 1, live, 0) != 0 ||
        write_one(dir, "expert_ids", NPY_DTYPE_INT32, r->expert_ids, 1, live / s->route.params.block_m, 0) != 0 ||
        write_one(dir, "expert_counts", NPY_DTYPE_INT32, r->expert_counts, 1, E, 0) != 0 ||
        write_one(dir, "expert_offsets", NPY_DTYPE_INT32, r->expert_offsets, 1, E + 1, 0) != 0)
        return -1;
    /* The inputs besides the logits, random ones too: with them the run
     * can be replayed (--bias, --expert-map). */
    if (s->route.host_bias &&
        write_one(dir, "correction_bias", NPY_DTYPE_FLOAT32, s->route.host_bias, 1, all, 0) != 0)
        return -1;
    if (s->route.host_map && write_one(dir, "expert_map", NPY_DTYPE_INT32, s->route.host_map, 1, all, 0) != 0)
        return -1;
    printf("outputs:        written to %s/\n", dir);
    return 0;
}
