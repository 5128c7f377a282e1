/*
 * The GPU side of alphamoe-route: whether a usable device is there, the
 * route fixture's device buffers, the timed alphamoe_route calls and the
 * check of the outputs against the host reference.
 */
#ifndef ALPHAMOE_TOOLS_GPU_SESSION_H
#define ALPHAMOE_TOOLS_GPU_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "route_session.h"

typedef struct gpu_probe {
    bool usable;
    char why[512]; /* when not usable */
    char name[256];
    int32_t compute_capability;
    int32_t image_arch;
} gpu_probe;

/* Decides between the GPU and the host fallback. Returns 0 (see
 * p->usable), EXIT_USAGE for a device ordinal that does not exist, or -1. */
int probe_gpu(int32_t device, gpu_probe *p);

/* Marks the GPU unusable when the library's kernels do not implement the
 * router's flavour (alphamoe_router_select says so). Returns 0 or -1. */
int check_gpu_flavour(const session *s, gpu_probe *p);

/* Prints the selection, times s->opt.repeat calls into s->samples, then
 * routes once more with the outputs poisoned, copies them into s->gpu,
 * the host reference of the same logits into s->reference, and prints
 * how they compare; *matches says whether they agree. */
int run_gpu_path(session *s, bool *matches);

/* "9.0" for compute capability 90. */
void format_cc(int32_t cc, char *buf, size_t size);
/* "sm_90a" for image arch 90, "none" for 0. */
void format_image(int32_t image_arch, char *buf, size_t size);

#endif
