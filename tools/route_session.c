#include "route_session.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "random_inputs.h"

void session_release(session *s) {
    if (s->typed_logits != s->logits) free(s->typed_logits);
    free(s->logits);
    free(s->file_bias);
    free(s->file_map);
    fixture_destroy(&s->route);
    arena_close(&s->arena);
    host_outputs_free(&s->reference);
    host_outputs_free(&s->gpu);
    free(s->samples);
    memset(s, 0, sizeof(*s));
}

#define LOGITS_DTYPES (NPY_DTYPE_FLOAT32 | NPY_DTYPE_FLOAT16 | NPY_DTYPE_BFLOAT16 | NPY_DTYPE_BITS16)
#define LOGITS_EXPECTED                                                                                 \
    "logits must be float32 ('<f4'), float16 ('<f2'), bfloat16 ('<V2', as NumPy saves ml_dtypes.bfloat16) " \
    "or 16-bit patterns ('<u2', '<i2') with --dtype bf16 or f16"

/* The router's logits type for the file's dtype, which --dtype must match
 * when given: converting would route other values than the file's. */
static int logits_type_of(options *o, const npy_array *a) {
    int32_t type = ALPHAMOE_LOGITS_F32;
    if (a->dtype == NPY_DTYPE_FLOAT16) type = ALPHAMOE_LOGITS_F16;
    if (a->dtype == NPY_DTYPE_BFLOAT16) type = ALPHAMOE_LOGITS_BF16;
    if (a->dtype == NPY_DTYPE_BITS16) {
        if (!o->dtype_given || o->logits_type == ALPHAMOE_LOGITS_F32)
            return arg_error("%s holds 16-bit patterns ('%s') of no named type: say which with --dtype bf16 or "
                             "--dtype f16", o->input, a->descr);
        return 0;
    }
    if (o->dtype_given && o->logits_type != type)
        return arg_error("%s holds %s logits ('%s') but --dtype is %s: drop --dtype to route the file's values, "
                         "or convert the file", o->input, logits_type_name(type), a->descr,
                         logits_type_name(o->logits_type));
    o->logits_type = type;
    return 0;
}

/* What keeps the array from being [tokens, experts] logits, or NULL. */
static const char *not_logits(const npy_array *a) {
    if (a->ndim != 2) return "logits must be 2-D [tokens, experts]";
    if (a->shape[0] > INT32_MAX || a->shape[1] > INT32_MAX) return "the shape is too large";
    if (a->shape[1] == 0) return "rows have no experts";
    return NULL;
}

int load_input(session *s) {
    options *o = &s->opt;
    char err[512];
    npy_array a;
    if (npy_read(o->input, LOGITS_DTYPES, LOGITS_EXPECTED, &a, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    s->typed_logits = a.data;
    const char *why = not_logits(&a);
    if (why != NULL) {
        fprintf(stderr, PROG ": %s: %s (a %d-D array of %" PRId64 " values)\n", o->input, why, a.ndim, a.count);
        return 1;
    }
    const int64_t rows = a.shape[0], cols = a.shape[1];
    if (o->experts != 0 && cols != o->experts)
        return arg_error("%s has %" PRId64 " experts per row but --experts is %" PRId32, o->input, cols,
                         o->experts);
    if (o->experts == 0 && o->preset_given && cols != o->preset->experts)
        return arg_error("%s has %" PRId64 " experts per row but --preset %s routes %" PRId32
                         ": give a file of %" PRId32 " columns, or --experts %" PRId64
                         " to route the preset's flavour over the file's experts",
                         o->input, cols, o->preset->name, o->preset->experts, o->preset->experts, cols);
    if (o->tokens_given && rows != o->tokens)
        return arg_error("%s has %" PRId64 " tokens but --tokens is %" PRId32, o->input, rows, o->tokens);
    o->tokens = (int32_t)rows;
    o->experts = (int32_t)cols;
    return logits_type_of(o, &a);
}

/* Reads a 1-D array of one value per expert; returns 0 or EXIT_USAGE. */
static int read_per_expert(const char *path, unsigned dtypes, const char *expected, int32_t E, npy_array *a) {
    char err[512];
    if (npy_read(path, dtypes, expected, a, err, sizeof(err)) != 0) return arg_error("%s", err);
    if (a->ndim != 1 || a->shape[0] != E)
        return arg_error("%s: a %d-D array of %" PRId64 " values, but the router has %" PRId32
                         " experts: one value per expert, shape (%" PRId32 ",), is needed",
                         path, a->ndim, a->count, E, E);
    return 0;
}

static int load_bias(session *s, int32_t E) {
    npy_array a;
    const char *path = s->opt.bias_file;
    int rc = read_per_expert(path, NPY_DTYPE_FLOAT32, "a correction bias must be float32 ('<f4')", E, &a);
    s->file_bias = a.data;
    for (int32_t e = 0; rc == 0 && e < E; ++e)
        if (!isfinite(s->file_bias[e]))
            rc = arg_error("%s: correction_bias[%" PRId32 "] is %g: every bias must be finite", path, e,
                           (double)s->file_bias[e]);
    return rc;
}

/* Each entry -1 (an expert of another rank) or a local id, each id once;
 * the local experts are 0 to the largest id. */
static int load_map(session *s, int32_t E) {
    npy_array a;
    const char *path = s->opt.map_file;
    int rc = read_per_expert(path, NPY_DTYPE_INT32 | NPY_DTYPE_INT64,
                             "an expert map must be int32 ('<i4') or int64 ('<i8')", E, &a);
    int32_t *map = malloc((size_t)E * sizeof(int32_t)), *owner = malloc((size_t)E * sizeof(int32_t));
    if (rc == 0 && (map == NULL || owner == NULL)) rc = arg_error("out of host memory for the expert map");
    int64_t largest = -1;
    for (int32_t e = 0; e < E && rc == 0; ++e) owner[e] = -1;
    for (int32_t e = 0; e < E && rc == 0; ++e) {
        const int64_t v = a.dtype == NPY_DTYPE_INT64 ? ((const int64_t *)a.data)[e] : ((const int32_t *)a.data)[e];
        if (v < -1 || v >= E)
            rc = arg_error("%s: expert_map[%" PRId32 "] = %" PRId64 ": each entry must be -1 (another rank's "
                           "expert) or a local expert id in [0, %" PRId32 ")", path, e, v, E);
        else if (v >= 0 && owner[v] >= 0)
            rc = arg_error("%s: local expert %" PRId64 " is expert_map[%" PRId32 "] and expert_map[%" PRId32
                           "]: each local id belongs to one expert", path, v, owner[v], e);
        else if (v >= 0)
            owner[v] = e;
        map[e] = (int32_t)v;
        largest = v > largest ? v : largest;
    }
    if (rc == 0 && largest < 0) rc = arg_error("%s: every entry is -1: no local experts", path);
    free(a.data);
    free(owner);
    s->file_map = map;
    if (rc == 0) s->opt.ep_map_count = (int32_t)largest + 1;
    return rc;
}

int load_bias_and_map(session *s) {
    /* The router refuses a count outside [1, ALPHAMOE_MAX_EXPERTS] with its own message. */
    const int32_t E = s->opt.experts ? s->opt.experts : s->opt.preset->experts;
    if ((s->opt.bias_file || s->opt.map_file) && (E < 1 || E > ALPHAMOE_MAX_EXPERTS)) return 0;
    if (s->opt.bias_file && load_bias(s, E) != 0) return EXIT_USAGE;
    if (s->opt.map_file && load_map(s, E) != 0) return EXIT_USAGE;
    return 0;
}

int create_router(session *s) {
    const alphamoe_params p = options_params(&s->opt);
    const alphamoe_status st = fixture_router(&s->route, &p, s->opt.tokens);
    if (st == ALPHAMOE_ERROR_OUT_OF_MEMORY) {
        fprintf(stderr, PROG ": out of host memory\n");
        return 1;
    }
    if (st != ALPHAMOE_OK) return params_error(&s->opt, &p, st);
    return 0;
}

int32_t plan_experts(const session *s) { return s->route.params.local_expert_count; }

int make_inputs(session *s) {
    const alphamoe_params *p = &s->route.params;
    const size_t n = (size_t)s->opt.tokens * (size_t)p->num_experts;
    if (!s->opt.input) {
        s->logits = malloc((n > 0 ? n : 1) * sizeof(float));
        if (s->logits != NULL) uniform_logits(s->opt.seed, s->logits, n);
    }
    if (s->logits != NULL)
        s->typed_logits =
            p->logits_type == ALPHAMOE_LOGITS_F32 ? s->logits : convert_logits(s->logits, n, p->logits_type);
    if (s->typed_logits == NULL) {
        fprintf(stderr, PROG ": out of host memory for %zu logits\n", n);
        return -1;
    }
    const size_t E = (size_t)p->num_experts;
    fixture_fill_inputs(&s->route, s->opt.seed ^ 0xB1A5B1A5ull);
    if (s->route.host_bias && s->file_bias) memcpy(s->route.host_bias, s->file_bias, E * sizeof(float));
    if (s->route.host_map && s->file_map) memcpy(s->route.host_map, s->file_map, E * sizeof(int32_t));
    else if (s->route.host_map)
        random_expert_map(s->opt.seed, s->route.host_map, p->num_experts, p->local_expert_count);
    return 0;
}

int route_reference(session *s) {
    const route_fixture *f = &s->route;
    const alphamoe_buffers b = fixture_host_buffers(f, &s->reference);
    ROUTER_TRY(alphamoe_route_host(f->router, s->opt.tokens, s->typed_logits, &b));
    return 0;
}

static int compare_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void print_timing(double *samples, int32_t n, const char *what) {
    qsort(samples, (size_t)n, sizeof(double), compare_double);
    const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    printf("time:           median %.2f us, min %.2f us over %" PRId32 " calls\n", median, samples[0], n);
    printf("                (%s)\n", what);
}
