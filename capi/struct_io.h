// Reading and writing the public struct_size-prefixed structs. A caller's
// struct may be older (shorter) or newer (longer) than ours: we read the
// fields both know, default the rest to zero, and write back only the bytes
// the caller's struct has. Between our first and our newest version, a
// struct_size must be the size of one of the published versions: a size
// ending inside a field would hand us half of it.
#ifndef ALPHAMOE_CAPI_STRUCT_IO_H
#define ALPHAMOE_CAPI_STRUCT_IO_H

#include <stddef.h>
#include <string.h>

#include "alphamoe/router.h"

namespace alphamoe {

// versions: the sizes of the struct's published versions, oldest first,
// the last one sizeof(T).
template <typename T, size_t N>
bool known_struct_size(size_t struct_size, const size_t (&versions)[N]) {
    if (struct_size > sizeof(T)) return true;  // a newer caller: we read what we know
    for (size_t v : versions)
        if (struct_size == v) return true;
    return false;
}

// Reads *in into *out.
template <typename T, size_t N>
alphamoe_status read_struct(const T *in, const size_t (&versions)[N], T *out) {
    if (in == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    if (!known_struct_size<T>(in->struct_size, versions)) return ALPHAMOE_ERROR_STRUCT_SIZE;
    memset(out, 0, sizeof(T));
    memcpy(out, in, in->struct_size < sizeof(T) ? in->struct_size : sizeof(T));
    return ALPHAMOE_OK;
}

// For structs with one published version: min_size is its size.
template <typename T>
alphamoe_status read_struct(const T *in, size_t min_size, T *out) {
    const size_t versions[] = {min_size};
    return read_struct(in, versions, out);
}

// Checks that *out can take one of the published versions.
template <typename T, size_t N>
alphamoe_status check_output_struct(const T *out, const size_t (&versions)[N]) {
    if (out == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    if (!known_struct_size<T>(out->struct_size, versions)) return ALPHAMOE_ERROR_STRUCT_SIZE;
    return ALPHAMOE_OK;
}

template <typename T>
alphamoe_status check_output_struct(const T *out, size_t min_size) {
    const size_t versions[] = {min_size};
    return check_output_struct(out, versions);
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
