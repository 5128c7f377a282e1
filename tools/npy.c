#include "npy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* A real header is a few hundred bytes; anything far larger is not a file
 * we should trust with an allocation. */
#define NPY_MAX_HEADER_LEN (1u << 20)
/* The header block (preamble included) is padded to this, as NumPy does,
 * so that the data that follows is aligned for memory mapping. */
#define NPY_HEADER_ALIGN 64

#if defined(__GNUC__)
#define NPY_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define NPY_PRINTF(f, a)
#endif

static int fail(char *err, size_t err_size, const char *path, const char *fmt, ...) NPY_PRINTF(4, 5);

static int fail(char *err, size_t err_size, const char *path, const char *fmt, ...) {
    if (err_size == 0) return -1;
    int used = snprintf(err, err_size, "%s: ", path);
    if (used < 0 || (size_t)used >= err_size) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + used, err_size - (size_t)used, fmt, ap);
    va_end(ap);
    return -1;
}

static bool host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static uint32_t load_le(const unsigned char *bytes, int n) {
    uint32_t value = 0;
    for (int i = n - 1; i >= 0; --i) value = (value << 8) | bytes[i];
    return value;
}

/* ------------------------------------------------------------------ */
/* Header parsing                                                      */
/* ------------------------------------------------------------------ */

static const char *skip_spaces(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
    return p;
}

/* The value following `'key':` in the header dict, or NULL. NumPy writes a
 * Python repr (single quotes); double quotes are accepted too since some
 * other writers emit them. */
static const char *find_value(const char *header, const char *key) {
    const char quotes[] = {'\'', '"'};
    for (size_t i = 0; i < sizeof(quotes); ++i) {
        char pattern[32];
        snprintf(pattern, sizeof(pattern), "%c%s%c", quotes[i], key, quotes[i]);
        const char *p = strstr(header, pattern);
        if (p == NULL) continue;
        p = skip_spaces(p + strlen(pattern));
        if (*p != ':') return NULL;
        return skip_spaces(p + 1);
    }
    return NULL;
}

static int parse_quoted(const char *p, char *out, size_t out_size) {
    const char quote = *p;
    if (quote != '\'' && quote != '"') return -1;
    const char *end = strchr(p + 1, quote);
    if (end == NULL || (size_t)(end - p - 1) >= out_size) return -1;
    memcpy(out, p + 1, (size_t)(end - p - 1));
    out[end - p - 1] = '\0';
    return 0;
}

static int parse_bool(const char *p, bool *value) {
    if (strncmp(p, "False", 5) == 0) {
        *value = false;
        return 0;
    }
    if (strncmp(p, "True", 4) == 0) {
        *value = true;
        return 0;
    }
    return -1;
}

/* A Python tuple of non-negative integers: "()", "(5,)", "(5, 3)". */
static int parse_shape(const char *p, int64_t *dims, int *ndim) {
    if (*p != '(') return -1;
    p = skip_spaces(p + 1);
    *ndim = 0;
    while (*p != ')') {
        if (*ndim == NPY_MAX_DIMS || *p < '0' || *p > '9') return -1;
        char *end = NULL;
        errno = 0;
        const long long v = strtoll(p, &end, 10);
        if (errno != 0 || end == p) return -1;
        dims[(*ndim)++] = (int64_t)v;
        p = skip_spaces(end);
        if (*p == ',') p = skip_spaces(p + 1);
        else if (*p != ')') return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

/* Reads the magic, version and header dict; on success *text is a
 * NUL-terminated copy of the dict (free() it). */
static int read_header(FILE *f, const char *path, char **text, char *err, size_t err_size) {
    unsigned char pre[NPY_MAGIC_LEN + 2];
    if (fread(pre, 1, sizeof(pre), f) != sizeof(pre) || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return fail(err, err_size, path, "not a .npy file (bad magic)");
    const int major = pre[NPY_MAGIC_LEN];
    if (major < 1 || major > 3)
        return fail(err, err_size, path, ".npy format version %d.%d is not supported (1.0, 2.0 or 3.0)",
                    major, pre[NPY_MAGIC_LEN + 1]);
    /* Version 3.0 differs from 2.0 only in allowing UTF-8 field names,
     * which a plain array never has. */
    const int len_bytes = major == 1 ? 2 : 4;
    unsigned char len_buf[4];
    if (fread(len_buf, 1, (size_t)len_bytes, f) != (size_t)len_bytes)
        return fail(err, err_size, path, "truncated .npy header");
    const uint32_t len = load_le(len_buf, len_bytes);
    if (len > NPY_MAX_HEADER_LEN) return fail(err, err_size, path, "implausible .npy header length %" PRIu32, len);
    char *buf = malloc((size_t)len + 1);
    if (buf == NULL) return fail(err, err_size, path, "out of memory");
    if (fread(buf, 1, len, f) != len) {
        free(buf);
        return fail(err, err_size, path, "truncated .npy header");
    }
    buf[len] = '\0';
    *text = buf;
    return 0;
}

typedef struct dtype_name {
    const char *descr;
    npy_dtype dtype;
    size_t size;
} dtype_name;

static const dtype_name kDtypes[] = {
    {"<i4", NPY_DTYPE_INT32, 4},     {"<f4", NPY_DTYPE_FLOAT32, 4}, {"<f2", NPY_DTYPE_FLOAT16, 2},
    {"<V2", NPY_DTYPE_BFLOAT16, 2},  {"<u2", NPY_DTYPE_BITS16, 2},  {"<i2", NPY_DTYPE_BITS16, 2},
    {"<i8", NPY_DTYPE_INT64, 8},
};

/* Reads the dtype, the order and the shape from the dict into a. */
static int check_header(const char *header, const char *path, unsigned accepted, const char *expected,
                        npy_array *a, size_t *elem_size, char *err, size_t err_size) {
    const char *v = find_value(header, "descr");
    if (v == NULL || parse_quoted(v, a->descr, sizeof(a->descr)) != 0)
        return fail(err, err_size, path, "the .npy header has no readable 'descr' (a structured dtype?)");
    const dtype_name *found = NULL;
    for (size_t i = 0; i < sizeof(kDtypes) / sizeof(kDtypes[0]); ++i)
        if (strcmp(kDtypes[i].descr, a->descr) == 0 && (accepted & kDtypes[i].dtype)) found = &kDtypes[i];
    if (found == NULL) return fail(err, err_size, path, "dtype '%s' is not supported: %s", a->descr, expected);
    a->dtype = found->dtype;
    *elem_size = found->size;
    bool fortran = false;
    v = find_value(header, "fortran_order");
    if (v == NULL || parse_bool(v, &fortran) != 0)
        return fail(err, err_size, path, "the .npy header has no readable 'fortran_order'");
    if (fortran)
        return fail(err, err_size, path, "array is in Fortran order; save a C-order array (np.ascontiguousarray)");
    v = find_value(header, "shape");
    if (v == NULL || parse_shape(v, a->shape, &a->ndim) != 0)
        return fail(err, err_size, path, "the .npy header has no readable 'shape'");
    /* The element count, refused before it could overflow anything. */
    a->count = 1;
    for (int i = 0; i < a->ndim; ++i) {
        if (a->shape[i] > 0 && a->count > (int64_t)(SIZE_MAX / found->size) / a->shape[i])
            return fail(err, err_size, path, "the array's shape is too large to load");
        a->count *= a->shape[i];
    }
    return 0;
}

static int read_payload(FILE *f, const char *path, npy_array *a, size_t elem_size, char *err, size_t err_size) {
    const size_t bytes = (size_t)a->count * elem_size;
    a->data = malloc(bytes > 0 ? bytes : 1);
    if (a->data == NULL) return fail(err, err_size, path, "out of memory for %zu bytes", bytes);
    if (fread(a->data, 1, bytes, f) != bytes) {
        free(a->data);
        a->data = NULL;
        return fail(err, err_size, path, "file is truncated: the header promises %" PRId64 " '%s' values", a->count,
                    a->descr);
    }
    return 0;
}

int npy_read(const char *path, unsigned accepted, const char *expected, npy_array *out, char *err,
             size_t err_size) {
    memset(out, 0, sizeof(*out));
    if (!host_is_little_endian()) return fail(err, err_size, path, "reading .npy files needs a little-endian host");
    FILE *f = fopen(path, "rb");
    if (f == NULL) return fail(err, err_size, path, "cannot open: %s", strerror(errno));
    char *header = NULL;
    size_t elem_size = 0;
    int rc = read_header(f, path, &header, err, err_size);
    if (rc == 0) rc = check_header(header, path, accepted, expected, out, &elem_size, err, err_size);
    if (rc == 0) rc = read_payload(f, path, out, elem_size, err, err_size);
    free(header);
    fclose(f);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

/* Builds the complete version 1.0 header block into buf; returns its
 * length, or 0 when it does not fit. */
static size_t format_header(char *buf, size_t buf_size, npy_dtype dtype, int ndim, const int64_t *shape) {
    char shape_text[64];
    if (ndim == 1)
        snprintf(shape_text, sizeof(shape_text), "(%" PRId64 ",)", shape[0]);
    else
        snprintf(shape_text, sizeof(shape_text), "(%" PRId64 ", %" PRId64 ")", shape[0], shape[1]);
    const char order = host_is_little_endian() ? '<' : '>';
    const char *kind = dtype == NPY_DTYPE_INT32 ? "i4" : "f4";
    const size_t preamble = NPY_MAGIC_LEN + 2 + 2;
    const int dict_len = snprintf(buf + preamble, buf_size - preamble,
                                  "{'descr': '%c%s', 'fortran_order': False, 'shape': %s, }",
                                  order, kind, shape_text);
    if (dict_len < 0) return 0;
    size_t total = preamble + (size_t)dict_len + 1;
    total = (total + NPY_HEADER_ALIGN - 1) / NPY_HEADER_ALIGN * NPY_HEADER_ALIGN;
    if (total > buf_size) return 0;
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    buf[NPY_MAGIC_LEN] = 1;
    buf[NPY_MAGIC_LEN + 1] = 0;
    const size_t header_len = total - preamble;
    buf[NPY_MAGIC_LEN + 2] = (char)(header_len & 0xff);
    buf[NPY_MAGIC_LEN + 3] = (char)(header_len >> 8);
    memset(buf + preamble + dict_len, ' ', total - preamble - (size_t)dict_len - 1);
    buf[total - 1] = '\n';
    return total;
}

int npy_write(const char *path, npy_dtype dtype, const void *data, int ndim,
              const int64_t *shape, char *err, size_t err_size) {
    if (ndim < 1 || ndim > 2) return fail(err, err_size, path, "only 1-D and 2-D arrays can be written");
    uint64_t count = 1;
    for (int i = 0; i < ndim; ++i) {
        if (shape[i] < 0) return fail(err, err_size, path, "negative dimension %" PRId64, shape[i]);
        count *= (uint64_t)shape[i];
    }
    if (count > 0 && data == NULL) return fail(err, err_size, path, "no data to write");
    char header[256];
    const size_t header_len = format_header(header, sizeof(header), dtype, ndim, shape);
    if (header_len == 0) return fail(err, err_size, path, "cannot format the .npy header");
    FILE *f = fopen(path, "wb");
    if (f == NULL) return fail(err, err_size, path, "cannot create: %s", strerror(errno));
    int error = 0;
    if (fwrite(header, 1, header_len, f) != header_len ||
        (count > 0 && fwrite(data, 4, (size_t)count, f) != (size_t)count))
        error = errno ? errno : EIO;
    if (fclose(f) != 0 && error == 0) error = errno ? errno : EIO;
    if (error != 0) {
        remove(path);
        return fail(err, err_size, path, "write failed: %s", strerror(error));
    }
    return 0;
}
