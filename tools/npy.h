/*
 * Minimal .npy (NumPy format 1.0 and 2.0) support for alphamoe-route:
 * reading router logits and writing the route outputs, so that both can be
 * exchanged with Python without any other dependency.
 *
 * Functions return 0 on success and -1 on failure, with a one-line message
 * (naming the file) in err.
 */
#ifndef ALPHAMOE_TOOLS_NPY_H
#define ALPHAMOE_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

typedef enum npy_dtype {
    NPY_DTYPE_INT32,
    NPY_DTYPE_FLOAT32
} npy_dtype;

/* Reads a little-endian float32, C-order, 2-D array. On success *data holds
 * rows * cols values (release it with free(); it may be NULL when the array
 * is empty). Anything else (another dtype, Fortran order, another rank, a
 * truncated file) is rejected with a message saying what was found. */
int npy_read_f32_2d(const char *path, float **data, int64_t *rows, int64_t *cols,
                    char *err, size_t err_size);

/* Writes a C-order array of ndim (1 or 2) dimensions in the host's byte
 * order, which the header records. */
int npy_write(const char *path, npy_dtype dtype, const void *data, int ndim,
              const int64_t *shape, char *err, size_t err_size);

#endif
