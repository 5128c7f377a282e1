#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool option_split(const char *arg, char *name, size_t size, const char **value) {
    const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    *value = eq ? eq + 1 : NULL;
    if (len >= size) return false;
    memcpy(name, arg, len);
    name[len] = '\0';
    return true;
}

bool parse_integer(const char *text, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    const long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool parse_u64(const char *text, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    if (text[0] == '-' || text[0] == '\0') return false;
    const unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0') return false;
    *out = (uint64_t)v;
    return true;
}
