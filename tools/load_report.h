/*
 * What alphamoe-route reports about one routing: how the pairs spread over
 * the experts, how much of the plan is padding, and the outputs as .npy
 * files.
 */
#ifndef ALPHAMOE_TOOLS_LOAD_REPORT_H
#define ALPHAMOE_TOOLS_LOAD_REPORT_H

#include "route_session.h"

int print_load(const session *s, const output_set *r);

/* Creates the directory when it does not exist and checks that files can
 * be made in it, before any work that --output would lose. Returns 0 or
 * -1 after saying why. */
int prepare_output_dir(const char *dir);

/* Writes the outputs of r, and the correction bias and expert map the
 * router read, into the directory s->opt.output (prepared). */
int write_outputs(const session *s, const output_set *r);

#endif
