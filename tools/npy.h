/*
 * Minimal .npy (NumPy format 1.0, 2.0 and 3.0) support for alphamoe-route:
 * reading router logits, a correction bias and an expert map, and writing
 * the route outputs, so that all of them can be exchanged with Python
 * without any other dependency.
 *
 * Functions return 0 on success and -1 on failure, with a one-line message
 * (naming the file) in err.
 */
#ifndef ALPHAMOE_TOOLS_NPY_H
#define ALPHAMOE_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

/* The element types read or written, little-endian; one bit each, so that
 * a reader can name the set it accepts. */
typedef enum npy_dtype {
    NPY_DTYPE_INT32 = 1 << 0,    /* '<i4' */
    NPY_DTYPE_FLOAT32 = 1 << 1,  /* '<f4' */
    NPY_DTYPE_FLOAT16 = 1 << 2,  /* '<f2', IEEE binary16 */
    /* '<V2': NumPy has no bfloat16, and np.save of an ml_dtypes bfloat16
     * array writes this, ml_dtypes' only two-byte type. */
    NPY_DTYPE_BFLOAT16 = 1 << 3,
    NPY_DTYPE_BITS16 = 1 << 4,   /* '<u2' or '<i2': 16-bit patterns of a type the file does not name */
    NPY_DTYPE_INT64 = 1 << 5     /* '<i8' */
} npy_dtype;

#define NPY_MAX_DIMS 32

typedef struct npy_array {
    npy_dtype dtype;
    char descr[16];  /* as the header spells it */
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    int64_t count;   /* elements */
    void *data;      /* malloc'd (at least one byte, even when empty); free() it */
} npy_array;

/* Reads a C-order array whose dtype is one of `accepted` (NPY_DTYPE_*
 * OR-ed); any other dtype is refused with a message ending in `expected`,
 * which says what the caller accepts. The caller checks the shape. */
int npy_read(const char *path, unsigned accepted, const char *expected, npy_array *out, char *err,
             size_t err_size);

/* Writes a C-order int32 or float32 array of ndim (1 or 2) dimensions in
 * the host's byte order, which the header records. */
int npy_write(const char *path, npy_dtype dtype, const void *data, int ndim,
              const int64_t *shape, char *err, size_t err_size);

#endif
