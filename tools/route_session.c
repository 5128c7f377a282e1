#include "route_session.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "random_inputs.h"

void session_release(session *s) {
    if (s->typed_logits != s->logits) free(s->typed_logits);
    free(s->logits);
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
    if (s->route.host_bias) random_bias(s->opt.seed ^ 0xB1A5B1A5ull, s->route.host_bias, p->num_experts);
    if (s->route.host_map)
        random_expert_map(s->opt.seed, s->route.host_map, p->num_experts, p->local_expert_count);
    return 0;
}

int route_reference(session *s) {
    const route_fixture *f = &s->route;
    const alphamoe_buffers b = buffers_for(&s->reference, &f->sizes, NULL, 0, f->host_bias, f->host_map);
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
