/*
 * --markdown: the run's tables as GitHub Markdown, for the documentation
 * to take as they are (never edited by hand). A line first names the
 * run (library, commit, GPU, driver, method); each table follows under
 * its heading between the comments <!-- alphamoe-bench:NAME --> and
 * <!-- /alphamoe-bench:NAME -->, NAME one of header, headline, floors,
 * shapes, flavours, pdl, sweep: the tables a run measured.
 */
#ifndef ALPHAMOE_BENCH_MARKDOWN_H
#define ALPHAMOE_BENCH_MARKDOWN_H

#include "bench_run.h"

int write_markdown(const bench_run *run, const char *path);

#endif
