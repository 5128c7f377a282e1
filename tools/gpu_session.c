#include "gpu_session.h"

#ifdef ALPHAMOE_PHASE_CLOCKS
#include "phase_clocks.h"
#endif

#include <dlfcn.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "route_check.h"

/* The first calls on a device pay for module loading and per-device
 * state; they are kept out of the timed loop. */
#define WARMUP_CALLS 3

void format_cc(int32_t cc, char *buf, size_t size) {
    snprintf(buf, size, "%" PRId32 ".%" PRId32, cc / 10, cc % 10);
}

void format_image(int32_t image_arch, char *buf, size_t size) {
    if (image_arch == 0) snprintf(buf, size, "none");
    else snprintf(buf, size, "sm_%" PRId32 "a", image_arch);
}

/* The library says only "missing or too old" (ALPHAMOE_ERROR_NO_DRIVER);
 * opening the driver it opens tells which, and which CUDA it supports. */
static void explain_no_driver(gpu_probe *p) {
    const char *env = getenv("ALPHAMOE_CUDA_DRIVER");
    const bool named = env != NULL && env[0] != '\0';
    const char *path = named ? env : "libcuda.so.1";
    void *lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        snprintf(p->why, sizeof(p->why), "no NVIDIA driver: %s%s not found (%s)", path,
                 named ? " (ALPHAMOE_CUDA_DRIVER)" : "", why ? why : "dlopen failed");
        return;
    }
    int (*get_version)(int *) = NULL;
    *(void **)&get_version = dlsym(lib, "cuDriverGetVersion");
    int version = 0;
    if (get_version == NULL || get_version(&version) != 0) version = 0;
    dlclose(lib);
    if (version > 0 && version < 12000)
        snprintf(p->why, sizeof(p->why),
                 "the NVIDIA driver is too old: %s supports CUDA %d.%d, and this library needs CUDA 12.0 or newer",
                 path, version / 1000, version % 1000 / 10);
    else
        snprintf(p->why, sizeof(p->why),
                 "the NVIDIA driver %s cannot be used: it lacks entry points this library needs (CUDA 12.0 or "
                 "newer), or is the CUDA toolkit's stub rather than a driver",
                 path);
}

int probe_gpu(int32_t device, gpu_probe *p) {
    memset(p, 0, sizeof(*p));
    /* The library first: its statuses say what is missing; the CUDA
     * runtime would call a missing driver "insufficient". */
    int32_t lib_count = 0;
    const alphamoe_status st = alphamoe_device_count(&lib_count);
    if (st == ALPHAMOE_ERROR_NO_DRIVER) {
        explain_no_driver(p);
        return 0;
    }
    if (st == ALPHAMOE_ERROR_NO_DEVICE || (st == ALPHAMOE_OK && lib_count == 0)) {
        const char *visible = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(p->why, sizeof(p->why), "no CUDA device: the NVIDIA driver reports none%s%s%s",
                 visible ? " (CUDA_VISIBLE_DEVICES=" : "", visible ? visible : "", visible ? ")" : "");
        return 0;
    }
    if (st != ALPHAMOE_OK) {
        snprintf(p->why, sizeof(p->why), "alphamoe_device_count: %s", alphamoe_status_string(st));
        return 0;
    }
    int cuda_count = 0;
    const cudaError_t e = cudaGetDeviceCount(&cuda_count);
    if (e == cudaErrorInsufficientDriver) {
        int driver = 0, runtime = 0;
        cudaDriverGetVersion(&driver);
        cudaRuntimeGetVersion(&runtime);
        snprintf(p->why, sizeof(p->why),
                 "the NVIDIA driver supports CUDA %d.%d, older than this tool's CUDA runtime %d.%d: update the "
                 "driver, or build the tool with an older CUDA toolkit",
                 driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
        return 0;
    }
    if (e != cudaSuccess) {
        snprintf(p->why, sizeof(p->why), "the CUDA runtime: cudaGetDeviceCount: %s: %s", cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return 0;
    }
    const int32_t count = cuda_count < lib_count ? cuda_count : lib_count;
    if (device >= count)
        return arg_error("--device %" PRId32 ": only %" PRId32 " CUDA device(s) visible", device, count);
    ROUTER_TRY(alphamoe_device_describe(device, p->name, sizeof(p->name), &p->compute_capability, &p->image_arch));
    if (p->image_arch == 0) {
        char cc[16];
        format_cc(p->compute_capability, cc, sizeof(cc));
        snprintf(p->why, sizeof(p->why), "device %" PRId32 " (%s, compute capability %s): %s", device, p->name, cc,
                 alphamoe_status_string(ALPHAMOE_ERROR_NO_IMAGE));
        return 0;
    }
    p->usable = true;
    return 0;
}

/* What the library would launch for this session on its device: the
 * selection's own status in *status, the attribute query's as the result. */
static alphamoe_status select_on_device(const session *s, alphamoe_selection *sel, alphamoe_status *status) {
    alphamoe_device_attributes attrs;
    memset(&attrs, 0, sizeof(attrs));
    attrs.struct_size = sizeof(attrs);
    const alphamoe_status query = alphamoe_device_attributes_query(s->opt.device, &attrs);
    if (query != ALPHAMOE_OK) return query;
    memset(sel, 0, sizeof(*sel));
    sel->struct_size = sizeof(*sel);
    *status = alphamoe_router_select(s->route.router, s->opt.tokens, &attrs, sel);
    return ALPHAMOE_OK;
}

int check_gpu_flavour(const session *s, gpu_probe *p) {
    if (!p->usable) return 0;
    alphamoe_selection sel;
    alphamoe_status st = ALPHAMOE_OK;
    ROUTER_TRY(select_on_device(s, &sel, &st));
    if (st == ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR) {
        p->usable = false;
        snprintf(p->why, sizeof(p->why),
                 "the GPU kernels of this library do not implement this routing flavour yet (%s)",
                 alphamoe_status_string(st));
    }
    return 0;
}

static int gpu_print_selection(const session *s) {
    alphamoe_selection sel;
    alphamoe_status st = ALPHAMOE_OK;
    ROUTER_TRY(select_on_device(s, &sel, &st));
    ROUTER_TRY(st);
    char image[16];
    format_image(sel.image_arch, image, sizeof(image));
    /* NULL only for a value the library does not name. */
    const char *name = alphamoe_specialization_name(sel.specialization);
    printf("specialization: %s (%s): grid %" PRId32 " x %" PRId32 " threads%s, %" PRId32
           " tokens per CTA, image %s\n",
           name ? name : "unknown",
           s->route.params.force_specialization != ALPHAMOE_SPECIALIZATION_AUTO ? "forced" : "chosen by the library",
           sel.grid_ctas, sel.block_threads, sel.cooperative ? ", cooperative" : "", sel.tokens_per_cta, image);
    return 0;
}

typedef struct gpu_state {
    cudaStream_t stream;
    cudaEvent_t start;
    cudaEvent_t stop;
} gpu_state;

/* Releases what was created; a failure here cannot change the outcome any
 * more, so it is ignored. */
static void gpu_release(gpu_state *g) {
    if (g->start) cudaEventDestroy(g->start);
    if (g->stop) cudaEventDestroy(g->stop);
    if (g->stream) cudaStreamDestroy(g->stream);
    memset(g, 0, sizeof(*g));
}

static int gpu_setup(session *s, gpu_state *g) {
    CUDA_TRY(cudaSetDevice(s->opt.device));
    CUDA_TRY(cudaStreamCreate(&g->stream));
    CUDA_TRY(cudaEventCreate(&g->start));
    CUDA_TRY(cudaEventCreate(&g->stop));
    TRY(arena_open(&s->arena, fixture_device_bytes(&s->route, SESSION_OUTPUTS)));
    TRY(fixture_alloc(&s->route, &s->arena, SESSION_OUTPUTS));
    return fixture_upload_logits(&s->route, s->typed_logits);
}

/* Each call is bracketed by its own pair of events, so a sample is what a
 * caller on the host observes for one call: launch overhead included. */
static int gpu_time(session *s, const gpu_state *g) {
    for (int i = 0; i < WARMUP_CALLS; ++i) TRY(issue_route(&s->route, g->stream));
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    for (int32_t i = 0; i < s->opt.repeat; ++i) {
        CUDA_TRY(cudaEventRecord(g->start, g->stream));
        TRY(issue_route(&s->route, g->stream));
        CUDA_TRY(cudaEventRecord(g->stop, g->stream));
        CUDA_TRY(cudaEventSynchronize(g->stop));
        float ms = 0.0f;
        CUDA_TRY(cudaEventElapsedTime(&ms, g->start, g->stop));
        s->samples[i] = (double)ms * 1000.0;
    }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    print_timing(s->samples, s->opt.repeat,
                 "host-observed cudaEvent time around each call, launch included; not kernel time");
#ifdef ALPHAMOE_PHASE_CLOCKS
    const route_fixture *f = &s->route;
    TRY(phase_clocks_report(f->router, f->tokens, f->logits, &f->buffers, g->stream));
#endif
    return 0;
}

static int gpu_check(session *s, const gpu_state *g, bool *matches) {
    TRY(fixture_host_outputs(&s->route, &s->gpu));
    route_diff d;
    TRY(fixture_check(&s->route, g->stream, issue_route, &s->route, &s->gpu, &s->reference, &d));
    if (d.first[0]) printf("                first difference: %s\n", d.first);
    printf("self-check:     ids and plan bitwise equal to alphamoe_route_host: %s;\n"
           "                max |weight - reference weight| = %.3g (allowed %.2g)\n",
           d.ids_equal ? "yes" : "no", d.max_weight_diff, d.weight_tolerance);
    *matches = d.ids_equal && d.weights_equal;
    printf("matches host reference: %s\n", *matches ? "yes" : "no");
    /* With no tokens the call writes only the live length; the statistics
     * must not read the poison behind the rest. */
    if (s->opt.tokens == 0) {
        memset(s->gpu.expert_counts, 0, (size_t)plan_experts(s) * sizeof(int32_t));
        memset(s->gpu.expert_offsets, 0, ((size_t)plan_experts(s) + 1) * sizeof(int32_t));
    }
    return 0;
}

int run_gpu_path(session *s, bool *matches) {
    gpu_state g;
    memset(&g, 0, sizeof(g));
    int rc = gpu_print_selection(s);
    if (rc == 0) rc = gpu_setup(s, &g);
    if (rc == 0) rc = gpu_time(s, &g);
    if (rc == 0) rc = gpu_check(s, &g, matches);
    gpu_release(&g);
    return rc;
}
