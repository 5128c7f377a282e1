/*
 * What alphamoe-route reports about one routing: how the pairs spread over
 * the experts, how much of the plan is padding, and the outputs as .npy
 * files.
 */
#ifndef ALPHAMOE_TOOLS_LOAD_REPORT_H
#define ALPHAMOE_TOOLS_LOAD_REPORT_H

#include "route_session.h"

int print_load(const session *s, const output_set *r);

/* Writes the outputs of r into the directory s->opt.output, creating it. */
int write_outputs(const session *s, const output_set *r);

#endif
