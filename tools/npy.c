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
#define NPY_MAX_DIMS 32
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
        return fail(err, err_size, path, ".npy format version %d.%d is not supported (1.0 or 2.0)",
                    major, pre[NPY_MAGIC_LEN + 1]);
    /* Version 3.0 differs from 2.0 only in allowing UTF-8 field names,
     * which a plain float32 array never has. */
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

/* Checks the dict describes a little-endian float32 C-order 2-D array and
 * returns its shape. */
static int check_header(const char *header, const char *path, int64_t *rows, int64_t *cols,
                        char *err, size_t err_size) {
    char descr[32];
    const char *v = find_value(header, "descr");
    if (v == NULL || parse_quoted(v, descr, sizeof(descr)) != 0)
        return fail(err, err_size, path, "the .npy header has no readable 'descr'");
    if (strcmp(descr, "<f4") != 0)
        return fail(err, err_size, path,
                    "dtype '%s' is not supported: logits must be little-endian float32 ('<f4'); "
                    "convert with arr.astype('<f4')", descr);
    bool fortran = false;
    v = find_value(header, "fortran_order");
    if (v == NULL || parse_bool(v, &fortran) != 0)
        return fail(err, err_size, path, "the .npy header has no readable 'fortran_order'");
    if (fortran)
        return fail(err, err_size, path,
                    "array is in Fortran order; save a C-order array (np.ascontiguousarray)");
    int64_t dims[NPY_MAX_DIMS];
    int ndim = 0;
    v = find_value(header, "shape");
    if (v == NULL || parse_shape(v, dims, &ndim) != 0)
        return fail(err, err_size, path, "the .npy header has no readable 'shape'");
    if (ndim != 2)
        return fail(err, err_size, path, "array has %d dimension(s); logits must be 2-D [tokens, experts]", ndim);
    if (dims[0] > INT32_MAX || dims[1] > INT32_MAX)
        return fail(err, err_size, path, "shape (%" PRId64 ", %" PRId64 ") is too large", dims[0], dims[1]);
    *rows = dims[0];
    *cols = dims[1];
    return 0;
}

static int read_payload(FILE *f, const char *path, int64_t rows, int64_t cols, float **data,
                        char *err, size_t err_size) {
    const uint64_t count = (uint64_t)rows * (uint64_t)cols;
    *data = NULL;
    if (count == 0) return 0;
    if (count > SIZE_MAX / sizeof(float))
        return fail(err, err_size, path, "array of %" PRIu64 " elements is too large", count);
    float *values = malloc((size_t)count * sizeof(float));
    if (values == NULL) return fail(err, err_size, path, "out of memory for %" PRIu64 " floats", count);
    if (fread(values, sizeof(float), (size_t)count, f) != (size_t)count) {
        free(values);
        return fail(err, err_size, path, "file is truncated: the header promises %" PRIu64 " float32 values",
                    count);
    }
    *data = values;
    return 0;
}

int npy_read_f32_2d(const char *path, float **data, int64_t *rows, int64_t *cols,
                    char *err, size_t err_size) {
    if (!host_is_little_endian())
        return fail(err, err_size, path, "reading .npy files needs a little-endian host");
    FILE *f = fopen(path, "rb");
    if (f == NULL) return fail(err, err_size, path, "cannot open: %s", strerror(errno));
    char *header = NULL;
    int64_t r = 0, c = 0;
    int rc = read_header(f, path, &header, err, err_size);
    if (rc == 0) rc = check_header(header, path, &r, &c, err, err_size);
    if (rc == 0) rc = read_payload(f, path, r, c, data, err, err_size);
    free(header);
    fclose(f);
    if (rc == 0) {
        *rows = r;
        *cols = c;
    }
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
