#include "gpu_session.h"

#ifdef ALPHAMOE_PHASE_CLOCKS
#include "phase_clocks.h"
#endif

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

/* The first calls on a device pay for module loading and per-device
 * state; they are kept out of the timed loop. */
#define WARMUP_CALLS 3

#define CUDA_CHECK(call)                                                                            \
    do {                                                                                            \
        const cudaError_t error_ = (call);                                                          \
        if (error_ != cudaSuccess) {                                                                \
            fprintf(stderr, PROG ": %s failed: %s: %s\n", #call, cudaGetErrorName(error_),          \
                    cudaGetErrorString(error_));                                                    \
            return -1;                                                                              \
        }                                                                                           \
    } while (0)

void format_cc(int32_t cc, char *buf, size_t size) {
    snprintf(buf, size, "%" PRId32 ".%" PRId32, cc / 10, cc % 10);
}

void format_image(int32_t image_arch, char *buf, size_t size) {
    if (image_arch == 0) snprintf(buf, size, "none");
    else snprintf(buf, size, "sm_%" PRId32 "a", image_arch);
}

int probe_gpu(int32_t device, gpu_probe *p) {
    memset(p, 0, sizeof(*p));
    int cuda_count = 0;
    const cudaError_t e = cudaGetDeviceCount(&cuda_count);
    if (e != cudaSuccess) {
        snprintf(p->why, sizeof(p->why), "cudaGetDeviceCount: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
        return 0;
    }
    if (cuda_count == 0) {
        snprintf(p->why, sizeof(p->why), "cudaGetDeviceCount reports no CUDA device");
        return 0;
    }
    int32_t lib_count = 0;
    const alphamoe_status st = alphamoe_device_count(&lib_count);
    if (st != ALPHAMOE_OK || lib_count == 0) {
        snprintf(p->why, sizeof(p->why), "alphamoe_device_count: %s",
                 st != ALPHAMOE_OK ? alphamoe_status_string(st) : "no CUDA device");
        return 0;
    }
    if (device >= cuda_count || device >= lib_count)
        return usage_error("--device %" PRId32 ": only %d CUDA device(s) visible", device, cuda_count);
    AMOE_CHECK(alphamoe_device_describe(device, p->name, sizeof(p->name), &p->compute_capability, &p->image_arch));
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
    *status = alphamoe_router_select(s->router, s->opt.tokens, &attrs, sel);
    return ALPHAMOE_OK;
}

int check_gpu_flavour(const session *s, gpu_probe *p) {
    if (!p->usable) return 0;
    alphamoe_selection sel;
    alphamoe_status st = ALPHAMOE_OK;
    AMOE_CHECK(select_on_device(s, &sel, &st));
    if (st == ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR) {
        p->usable = false;
        snprintf(p->why, sizeof(p->why),
                 "the GPU kernels of this library do not implement this routing flavour yet (%s)",
                 alphamoe_status_string(st));
    }
    return 0;
}

typedef struct gpu_state {
    cudaStream_t stream;
    cudaEvent_t start;
    cudaEvent_t stop;
    output_set out;
    void *logits;
    float *bias;
    int32_t *expert_map;
    void *workspace;
    size_t workspace_bytes;
} gpu_state;

static void warn_cuda(const char *what, cudaError_t e) {
    if (e != cudaSuccess)
        fprintf(stderr, PROG ": warning: %s failed: %s: %s\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* Releases whatever was created; a failure here cannot change the
 * outcome any more, so it is only reported. */
static void gpu_release(gpu_state *g, const alphamoe_sizes *z) {
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(&g->out, z, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i)
        if (*slots[i].ptr) warn_cuda("cudaFree", cudaFree(*slots[i].ptr));
    if (g->logits) warn_cuda("cudaFree", cudaFree(g->logits));
    if (g->bias) warn_cuda("cudaFree", cudaFree(g->bias));
    if (g->expert_map) warn_cuda("cudaFree", cudaFree(g->expert_map));
    if (g->workspace) warn_cuda("cudaFree", cudaFree(g->workspace));
    if (g->start) warn_cuda("cudaEventDestroy", cudaEventDestroy(g->start));
    if (g->stop) warn_cuda("cudaEventDestroy", cudaEventDestroy(g->stop));
    if (g->stream) warn_cuda("cudaStreamDestroy", cudaStreamDestroy(g->stream));
    memset(g, 0, sizeof(*g));
}

static int gpu_use_device(int32_t device) {
    CUDA_CHECK(cudaSetDevice(device));
    return 0;
}

static int gpu_print_selection(const session *s) {
    alphamoe_selection sel;
    alphamoe_status st = ALPHAMOE_OK;
    AMOE_CHECK(select_on_device(s, &sel, &st));
    AMOE_CHECK(st);
    char image[16];
    format_image(sel.image_arch, image, sizeof(image));
    /* NULL only for a value the library does not name. */
    const char *name = alphamoe_specialization_name(sel.specialization);
    printf("specialization: %s (%s): grid %" PRId32 " x %" PRId32 " threads%s, %" PRId32
           " tokens per CTA, image %s\n",
           name ? name : "unknown",
           s->params.force_specialization != ALPHAMOE_SPECIALIZATION_AUTO ? "forced" : "chosen by the library",
           sel.grid_ctas, sel.block_threads, sel.cooperative ? ", cooperative" : "", sel.tokens_per_cta, image);
    return 0;
}

static int gpu_setup(const session *s, gpu_state *g) {
    const alphamoe_sizes *z = &s->sizes;
    CUDA_CHECK(cudaStreamCreate(&g->stream));
    CUDA_CHECK(cudaEventCreate(&g->start));
    CUDA_CHECK(cudaEventCreate(&g->stop));
    buffer_slot slots[OUTPUT_COUNT];
    output_slots(&g->out, z, slots);
    for (int i = 0; i < OUTPUT_COUNT; ++i) CUDA_CHECK(cudaMalloc(slots[i].ptr, slots[i].bytes));
    g->workspace_bytes = alloc_bytes(z->workspace.bytes);
    CUDA_CHECK(cudaMalloc(&g->workspace, g->workspace_bytes));
    CUDA_CHECK(cudaMemset(g->workspace, 0, g->workspace_bytes));
    const size_t logits_bytes = (size_t)s->opt.tokens * (size_t)s->params.num_experts * s->logit_bytes;
    CUDA_CHECK(cudaMalloc(&g->logits, alloc_bytes((int64_t)logits_bytes)));
    if (logits_bytes > 0) CUDA_CHECK(cudaMemcpy(g->logits, s->typed_logits, logits_bytes, cudaMemcpyHostToDevice));
    const size_t E = (size_t)s->params.num_experts;
    CUDA_CHECK(cudaMalloc((void **)&g->bias, E * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(g->bias, s->bias, E * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMalloc((void **)&g->expert_map, E * sizeof(int32_t)));
    CUDA_CHECK(cudaMemcpy(g->expert_map, s->expert_map, E * sizeof(int32_t), cudaMemcpyHostToDevice));
    return 0;
}

static int gpu_route(const session *s, const gpu_state *g, const alphamoe_buffers *b) {
    AMOE_CHECK(alphamoe_route(s->router, s->opt.tokens, g->logits, b, g->stream));
    return 0;
}

/* Each call is bracketed by its own pair of events, so a sample is what a
 * caller on the host observes for one call: launch overhead included. */
static int gpu_time(session *s, const gpu_state *g) {
    const alphamoe_buffers b =
        buffers_for(&g->out, &s->sizes, g->workspace, g->workspace_bytes, g->bias, g->expert_map);
    for (int i = 0; i < WARMUP_CALLS; ++i)
        if (gpu_route(s, g, &b) != 0) return -1;
    CUDA_CHECK(cudaStreamSynchronize(g->stream));
    for (int32_t i = 0; i < s->opt.repeat; ++i) {
        CUDA_CHECK(cudaEventRecord(g->start, g->stream));
        if (gpu_route(s, g, &b) != 0) return -1;
        CUDA_CHECK(cudaEventRecord(g->stop, g->stream));
        CUDA_CHECK(cudaEventSynchronize(g->stop));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, g->start, g->stop));
        s->samples[i] = (double)ms * 1000.0;
    }
    CUDA_CHECK(cudaStreamSynchronize(g->stream));
    print_timing(s->samples, s->opt.repeat,
                 "host-observed cudaEvent time around each call, launch included; not kernel time");
#ifdef ALPHAMOE_PHASE_CLOCKS
    if (phase_clocks_report(s->router, s->opt.tokens, g->logits, &b, g->stream) != 0) return -1;
#endif
    return 0;
}

static int gpu_download(session *s, gpu_state *g) {
    buffer_slot dev[OUTPUT_COUNT], host[OUTPUT_COUNT];
    output_slots(&g->out, &s->sizes, dev);
    output_slots(&s->gpu, &s->sizes, host);
    for (int i = 0; i < OUTPUT_COUNT; ++i)
        CUDA_CHECK(cudaMemcpy(*host[i].ptr, *dev[i].ptr, host[i].bytes, cudaMemcpyDeviceToHost));
    /* With no tokens the call writes only the live length; the statistics
     * must not read the never-written device memory behind the rest. */
    if (s->opt.tokens == 0) {
        memset(s->gpu.expert_counts, 0, (size_t)plan_experts(s) * sizeof(int32_t));
        memset(s->gpu.expert_offsets, 0, ((size_t)plan_experts(s) + 1) * sizeof(int32_t));
    }
    return 0;
}

int run_gpu_path(session *s) {
    gpu_state g;
    memset(&g, 0, sizeof(g));
    int rc = host_outputs_alloc(&s->gpu, &s->sizes, PROG);
    if (rc == 0) rc = gpu_use_device(s->opt.device);
    if (rc == 0) rc = gpu_print_selection(s);
    if (rc == 0) rc = gpu_setup(s, &g);
    if (rc == 0) rc = gpu_time(s, &g);
    if (rc == 0) rc = gpu_download(s, &g);
    gpu_release(&g, &s->sizes);
    return rc;
}
