// Reading and writing the public struct_size-prefixed structs. A caller's
// struct may be older (shorter) or newer (longer) than ours: we read the
// fields both know, default the rest to zero, and write back only the bytes
// the caller's struct has.
#ifndef ALPHAMOE_CAPI_STRUCT_IO_H
#define ALPHAMOE_CAPI_STRUCT_IO_H

#include <stddef.h>
#include <string.h>

#include "alphamoe/router.h"

namespace alphamoe {

// Reads *in into *out. min_size is the size of the struct's first version;
// a struct_size below it is an error.
template <typename T>
alphamoe_status read_struct(const T *in, size_t min_size, T *out) {
    if (in == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    if (in->struct_size < min_size) return ALPHAMOE_ERROR_STRUCT_SIZE;
    memset(out, 0, sizeof(T));
    memcpy(out, in, in->struct_size < sizeof(T) ? in->struct_size : sizeof(T));
    return ALPHAMOE_OK;
}

// Checks that *out can take a struct of at least min_size bytes.
template <typename T>
alphamoe_status check_output_struct(const T *out, size_t min_size) {
    if (out == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    if (out->struct_size < min_size) return ALPHAMOE_ERROR_STRUCT_SIZE;
    return ALPHAMOE_OK;
}

// Writes value into *out up to the caller's struct_size, keeping it.
template <typename T>
void write_struct(const T &value, T *out) {
    const size_t caller_size = out->struct_size;
    memcpy(out, &value, caller_size < sizeof(T) ? caller_size : sizeof(T));
    out->struct_size = caller_size;
}

}  // namespace alphamoe

#endif
