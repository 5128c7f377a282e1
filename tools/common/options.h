/*
 * The pieces of a command line that alphamoe-route and alphamoe-bench read
 * alike: "--name value" and "--name=value", bounded integers and seeds.
 */
#ifndef ALPHAMOE_TOOLS_OPTIONS_H
#define ALPHAMOE_TOOLS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Splits "--name=value" into name and value. Returns false when the name
 * does not fit `size`; *value is NULL when the argument holds no '='. */
bool option_split(const char *arg, char *name, size_t size, const char **value);

/* A decimal integer in [lo, hi], nothing else in the text. */
bool parse_integer(const char *text, long long lo, long long hi, long long *out);

/* An unsigned decimal. strtoull accepts "-1" and wraps it; a seed that
 * silently wraps is a typo nobody would notice, so a sign is refused. */
bool parse_u64(const char *text, uint64_t *out);

#endif
