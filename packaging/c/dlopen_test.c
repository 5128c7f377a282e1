/* Opens the installed library by its SONAME with dlopen, as a plugin or a
 * language runtime would, finds every exported function by name and by
 * version node, and runs sizing, the CPU reference and a GPU route through
 * the pointers found. Without a GPU the route must answer
 * ALPHAMOE_ERROR_NO_DRIVER or ALPHAMOE_ERROR_NO_DEVICE; on a GPU it must
 * match the CPU reference.
 *
 *   dlopen_test EXPORTED_SYMBOLS_TXT
 *
 * Built against the installed header only (pkg-config --cflags) and linked
 * with -ldl alone: nothing here links the library itself. */
#define _GNU_SOURCE
#include <alphamoe/router_diagnostics.h>

#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);    \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
            ++failures;                                    \
        }                                                  \
    } while (0)

/* ---- the library, through dlopen ---- */
static void *library;

#define API(name) __typeof__(&name) name##_fn
static struct {
    API(alphamoe_status_string);
    API(alphamoe_version_number);
    API(alphamoe_version_string);
    API(alphamoe_router_create);
    API(alphamoe_router_destroy);
    API(alphamoe_router_get_params);
    API(alphamoe_router_sizes);
    API(alphamoe_route);
    API(alphamoe_route_host);
    API(alphamoe_device_attributes_query);
    API(alphamoe_specialization_name);
    API(alphamoe_router_select);
    API(alphamoe_kernel_count);
    API(alphamoe_kernel_name);
    API(alphamoe_kernel_images);
    API(alphamoe_device_count);
    API(alphamoe_device_describe);
} L;

/* Every function of the committed export list resolves, by name and under
 * its version node, to the same address; the calls below use the ones
 * they need. Returns the number of functions found. */
static int resolve_exports(const char *list_path, char *soname, size_t soname_size) {
    FILE *f = fopen(list_path, "r");
    if (!f) {
        printf("FAIL: cannot read %s\n", list_path);
        exit(1);
    }
    char line[256];
    int abi = -1, found = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == '#' || line[0] == 0) continue;
        if (sscanf(line, "abi %d", &abi) == 1) {
            snprintf(soname, soname_size, "libalphamoe_router.so.%d", abi);
            library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
            if (!library) {
                printf("FAIL: dlopen(\"%s\"): %s\n", soname, dlerror());
                exit(1);
            }
            continue;
        }
        char *at = strstr(line, "@@");
        if (!at) continue; /* a version node's own symbol */
        *at = 0;
        const char *name = line, *node = at + 2;
        void *by_name = library ? dlsym(library, name) : NULL;
        void *by_version = library ? dlvsym(library, name, node) : NULL;
        CHECK(by_name != NULL, "dlsym(%s) found nothing", name);
        CHECK(by_version == by_name, "dlvsym(%s, %s) = %p, dlsym %p", name, node, by_version, by_name);
        if (by_name) ++found;
    }
    fclose(f);
    if (!library) {
        printf("FAIL: %s has no abi line\n", list_path);
        exit(1);
    }
#define LOAD(name) *(void **)&L.name##_fn = dlsym(library, #name); \
    CHECK(L.name##_fn != NULL, "%s is public in router.h but not exported", #name)
    LOAD(alphamoe_status_string);
    LOAD(alphamoe_version_number);
    LOAD(alphamoe_version_string);
    LOAD(alphamoe_router_create);
    LOAD(alphamoe_router_destroy);
    LOAD(alphamoe_router_get_params);
    LOAD(alphamoe_router_sizes);
    LOAD(alphamoe_route);
    LOAD(alphamoe_route_host);
    LOAD(alphamoe_device_attributes_query);
    LOAD(alphamoe_specialization_name);
    LOAD(alphamoe_router_select);
    LOAD(alphamoe_kernel_count);
    LOAD(alphamoe_kernel_name);
    LOAD(alphamoe_kernel_images);
    LOAD(alphamoe_device_count);
    LOAD(alphamoe_device_describe);
    if (failures) exit(1);
    return found;
}

/* ---- random logits (splitmix64, seed printed) ---- */
static uint64_t rng_state;
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float rng_uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)(rng_next() >> 40) / (float)(1 << 24);
}

/* ---- the contract, computed here ---- */
enum { E = 96, K = 6, BLOCK_M = 16, M = 77 };
#define POISON 0x5A5A5A5A

/* Expert a (logit la) ranks before b: higher logit, then lower id. */
static int ranks_before(float la, int a, float lb, int b) {
    return la > lb || (la == lb && a < b);
}

static long expected_capacity(long e, long k, long block_m, long max_tokens) {
    const long pairs = max_tokens * k, first = pairs < e ? pairs : e;
    return (first + (pairs - first) / block_m) * block_m;
}

typedef struct outputs {
    int32_t *ids;
    float *weights;
    int32_t *sorted;
    int32_t *blocks;
    int32_t live;
    long capacity;
} outputs;

/* Checks ids, weights and the plan of M tokens; returns the failures. */
static int check_contract(const char *what, const float *logits, const outputs *o) {
    const int before = failures;
    for (int t = 0; t < M && failures == before; ++t) {
        const float *row = logits + (size_t)t * E;
        int want[K];
        for (int j = 0; j < K; ++j) { /* selection: best expert not yet taken */
            int best = -1;
            for (int x = 0; x < E; ++x) {
                int taken = 0;
                for (int i = 0; i < j; ++i) taken |= want[i] == x;
                if (!taken && (best < 0 || ranks_before(row[x], x, row[best], best))) best = x;
            }
            want[j] = best;
        }
        double m = -INFINITY, sum = 0;
        for (int j = 0; j < K; ++j) m = fmax(m, row[want[j]]);
        for (int j = 0; j < K; ++j) sum += exp((double)row[want[j]] - m);
        for (int j = 0; j < K; ++j) {
            CHECK(o->ids[t * K + j] == want[j], "%s: token %d slot %d is expert %d, the contract ranks %d", what,
                  t, j, o->ids[t * K + j], want[j]);
            const double w = exp((double)row[want[j]] - m) / sum;
            CHECK(fabs(o->weights[t * K + j] - w) <= 4e-6, "%s: token %d slot %d weight %.9g, softmax %.9g",
                  what, t, j, o->weights[t * K + j], w);
        }
    }
    long pos = 0;
    for (int e = 0; e < E && failures == before; ++e) {
        const long group_start = pos;
        for (int p = 0; p < M * K; ++p)
            if (o->ids[p] == e) {
                CHECK(pos < o->capacity && o->sorted[pos] == p, "%s: sorted_token_ids[%ld] = %d, want pair %d",
                      what, pos, pos < o->capacity ? o->sorted[pos] : -1, p);
                ++pos;
            }
        for (; pos % BLOCK_M; ++pos)
            CHECK(pos < o->capacity && o->sorted[pos] == M * K, "%s: sorted_token_ids[%ld] is not the sentinel",
                  what, pos);
        for (long b = group_start / BLOCK_M; b < pos / BLOCK_M && b < o->capacity / BLOCK_M; ++b)
            CHECK(o->blocks[b] == e, "%s: expert_ids[%ld] = %d, the block is expert %d's", what, b, o->blocks[b], e);
    }
    CHECK(o->live == pos, "%s: num_tokens_post_padded %d, the groups take %ld", what, o->live, pos);
    for (long i = pos; i < o->capacity; ++i)
        CHECK(o->sorted[i] == POISON, "%s: sorted_token_ids[%ld] past the live length was written", what, i);
    for (long b = pos / BLOCK_M; b < o->capacity / BLOCK_M; ++b)
        CHECK(o->blocks[b] == POISON, "%s: expert_ids[%ld] past the live blocks was written", what, b);
    return failures - before;
}

/* ---- a minimal CUDA driver client for the GPU route ---- */
static struct {
    int (*Init)(unsigned);
    int (*DeviceGetCount)(int *);
    int (*DeviceGet)(int *, int);
    int (*DevicePrimaryCtxRetain)(void **, int);
    int (*CtxSetCurrent)(void *);
    int (*MemAlloc)(unsigned long long *, size_t);
    int (*MemFree)(unsigned long long);
    int (*MemcpyHtoD)(unsigned long long, const void *, size_t);
    int (*MemcpyDtoH)(void *, unsigned long long, size_t);
    int (*MemsetD8)(unsigned long long, unsigned char, size_t);
    int (*CtxSynchronize)(void);
} cu;

/* 1: device 0 is current; 0: no driver or no device (why says which). */
static int open_cuda(char *why, size_t why_size) {
    const char *path = getenv("ALPHAMOE_CUDA_DRIVER");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, why_size, "no CUDA driver (%s)", dlerror());
        return 0;
    }
#define CU(field, name) *(void **)&cu.field = dlsym(lib, name)
    CU(Init, "cuInit");
    CU(DeviceGetCount, "cuDeviceGetCount");
    CU(DeviceGet, "cuDeviceGet");
    CU(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    CU(CtxSetCurrent, "cuCtxSetCurrent");
    CU(MemAlloc, "cuMemAlloc_v2");
    CU(MemFree, "cuMemFree_v2");
    CU(MemcpyHtoD, "cuMemcpyHtoD_v2");
    CU(MemcpyDtoH, "cuMemcpyDtoH_v2");
    CU(MemsetD8, "cuMemsetD8_v2");
    CU(CtxSynchronize, "cuCtxSynchronize");
    if (!cu.Init || !cu.DeviceGetCount) {
        snprintf(why, why_size, "the CUDA driver lacks cuInit");
        return 0;
    }
    int r = cu.Init(0), count = 0;
    if (r != 0 || cu.DeviceGetCount(&count) != 0 || count < 1) {
        snprintf(why, why_size, "no CUDA device (cuInit: %d, devices: %d)", r, count);
        return 0;
    }
    int dev = 0;
    void *ctx = NULL;
    if (!cu.DeviceGet || !cu.DevicePrimaryCtxRetain || !cu.CtxSetCurrent || !cu.MemAlloc || !cu.MemFree ||
        !cu.MemcpyHtoD || !cu.MemcpyDtoH || !cu.MemsetD8 || !cu.CtxSynchronize || cu.DeviceGet(&dev, 0) != 0 ||
        cu.DevicePrimaryCtxRetain(&ctx, dev) != 0 || cu.CtxSetCurrent(ctx) != 0) {
        printf("FAIL: %d CUDA devices visible but device 0 cannot be made current\n", count);
        exit(1);
    }
    snprintf(why, why_size, "%d CUDA devices", count);
    return 1;
}

static unsigned long long device_alloc(size_t bytes, unsigned char fill) {
    unsigned long long p = 0;
    if (cu.MemAlloc(&p, bytes ? bytes : 4) != 0 || cu.MemsetD8(p, fill, bytes ? bytes : 4) != 0) {
        printf("FAIL: cuMemAlloc/cuMemsetD8 of %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

static void device_read(void *dst, unsigned long long src, size_t bytes) {
    if (cu.MemcpyDtoH(dst, src, bytes) != 0) {
        printf("FAIL: cuMemcpyDtoH\n");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s EXPORTED_SYMBOLS_TXT\n", argv[0]);
        return 2;
    }
    char soname[64];
    const int functions = resolve_exports(argv[1], soname, sizeof soname);
    struct link_map *map = NULL;
    dlinfo(library, RTLD_DI_LINKMAP, &map);
    printf("dlopen(\"%s\"): %s, version %s; %d exported functions found by name and version node\n", soname,
           map ? map->l_name : "?", L.alphamoe_version_string_fn(), functions);
    CHECK(L.alphamoe_version_number_fn() == ALPHAMOE_VERSION_NUMBER,
          "library version %u, installed header %u", L.alphamoe_version_number_fn(), ALPHAMOE_VERSION_NUMBER);

    /* Sizing. */
    alphamoe_params p = {sizeof p, E, K, BLOCK_M, M};
    alphamoe_router *router = NULL;
    CHECK(L.alphamoe_router_create_fn(&p, &router) == ALPHAMOE_OK, "router_create");
    if (!router) return 1;
    alphamoe_params normalized = {sizeof normalized};
    CHECK(L.alphamoe_router_get_params_fn(router, &normalized) == ALPHAMOE_OK && normalized.logits_row_stride == E,
          "get_params: row stride %lld", (long long)normalized.logits_row_stride);
    alphamoe_sizes z = {sizeof z};
    CHECK(L.alphamoe_router_sizes_fn(router, &z) == ALPHAMOE_OK, "router_sizes");
    const long capacity = expected_capacity(E, K, BLOCK_M, M);
    CHECK(z.sorted_token_ids.elements == capacity && z.expert_ids.elements == capacity / BLOCK_M &&
              z.topk_ids.elements == M * K && z.topk_weights.bytes == 4L * M * K,
          "sizes: capacity %lld, the formula %ld", (long long)z.sorted_token_ids.elements, capacity);
    alphamoe_params bad = p;
    bad.top_k = 0;
    alphamoe_router *untouched = router;
    CHECK(L.alphamoe_router_create_fn(&bad, &untouched) == ALPHAMOE_ERROR_TOP_K && untouched == router,
          "top_k 0 must give ALPHAMOE_ERROR_TOP_K and leave *out");
    printf("sizing: capacity %ld for E=%d k=%d block_m=%d max_tokens=%d; bad input: %s\n", capacity, E, K, BLOCK_M,
           M, L.alphamoe_status_string_fn(ALPHAMOE_ERROR_TOP_K));

    /* The CPU reference. */
    const char *seed_text = getenv("ALPHAMOE_TEST_SEED");
    const uint64_t seed = seed_text ? strtoull(seed_text, NULL, 10) : (uint64_t)time(NULL);
    rng_state = seed;
    printf("seed %llu (ALPHAMOE_TEST_SEED=%llu replays it)\n", (unsigned long long)seed, (unsigned long long)seed);
    static float logits[M * E];
    for (int i = 0; i < M * E; ++i) logits[i] = rng_uniform(-8.f, 8.f);
    for (int x = 0; x < E; ++x) logits[5 * E + x] = x % 3 ? -0.5f : 1.f; /* a row of ties */
    static int32_t ids[M * K], sorted[M * K * BLOCK_M + E * BLOCK_M], blocks[M * K + E];
    static float weights[M * K];
    int32_t live = POISON;
    memset(sorted, 0x5A, sizeof sorted);
    memset(blocks, 0x5A, sizeof blocks);
    alphamoe_buffers hb = {sizeof hb, ids, weights, sorted, blocks, &live};
    hb.sorted_token_ids_capacity = capacity;
    hb.expert_ids_capacity = capacity / BLOCK_M;
    CHECK(L.alphamoe_route_host_fn(router, M, logits, &hb) == ALPHAMOE_OK, "route_host");
    const outputs host = {ids, weights, sorted, blocks, live, capacity};
    if (check_contract("CPU reference", logits, &host) == 0)
        printf("CPU reference: %d tokens follow the contract, %d plan rows\n", M, live);

    /* Selection and information, through the pointers found. */
    alphamoe_device_attributes h200 = {sizeof h200, 90, 132, 1, 1};
    alphamoe_selection sel = {sizeof sel};
    CHECK(L.alphamoe_router_select_fn(router, 1, &h200, &sel) == ALPHAMOE_OK &&
              L.alphamoe_specialization_name_fn(sel.specialization) != NULL,
          "router_select");
    CHECK(L.alphamoe_kernel_name_fn(0) != NULL && L.alphamoe_kernel_name_fn(L.alphamoe_kernel_count_fn()) == NULL,
          "kernel_name");
    int32_t archs[8], count = 0;
    CHECK(L.alphamoe_kernel_images_fn(0, archs, 8, &count) == ALPHAMOE_OK && count >= 1, "kernel_images");

    /* The GPU route. */
    char why[256];
    if (!open_cuda(why, sizeof why)) {
        int32_t devices = -1;
        const alphamoe_status sc = L.alphamoe_device_count_fn(&devices);
        /* The call a GPU program makes, with host memory where device
         * memory would be: refused before anything is touched. */
        alphamoe_buffers nb = hb;
        nb.workspace = aligned_alloc((size_t)z.workspace_alignment,
                                     ((size_t)z.workspace.bytes + 4095) / 4096 * 4096 + 4096);
        nb.workspace_bytes = (size_t)z.workspace.bytes;
        static int32_t ids_before[M * K], sorted_before[sizeof sorted / 4];
        memcpy(ids_before, ids, sizeof ids);
        memcpy(sorted_before, sorted, sizeof sorted);
        const int32_t live_before = live;
        const alphamoe_status sr = L.alphamoe_route_fn(router, M, logits, &nb, NULL);
        free(nb.workspace);
        CHECK(sr == ALPHAMOE_ERROR_NO_DRIVER || sr == ALPHAMOE_ERROR_NO_DEVICE,
              "without a GPU (%s) alphamoe_route said %s", why, L.alphamoe_status_string_fn(sr));
        CHECK(live == live_before && memcmp(ids, ids_before, sizeof ids) == 0 &&
                  memcmp(sorted, sorted_before, sizeof sorted) == 0,
              "a refused route wrote its outputs");
        CHECK(sc == sr, "device_count said %s, route %s", L.alphamoe_status_string_fn(sc),
              L.alphamoe_status_string_fn(sr));
        alphamoe_device_attributes a = {sizeof a};
        CHECK(L.alphamoe_device_attributes_query_fn(0, &a) == sr, "device_attributes_query");
        char name[64];
        int32_t cc = 0, image = 0;
        CHECK(L.alphamoe_device_describe_fn(0, name, sizeof name, &cc, &image) == sr, "device_describe");
        printf("GPU route skipped: %s; alphamoe_route said %s\n", why, L.alphamoe_status_string_fn(sr));
    } else {
        int32_t devices = 0, cc = 0, image = 0;
        char name[128] = "";
        CHECK(L.alphamoe_device_count_fn(&devices) == ALPHAMOE_OK && devices >= 1, "device_count");
        CHECK(L.alphamoe_device_describe_fn(0, name, sizeof name, &cc, &image) == ALPHAMOE_OK, "device_describe");
        const unsigned long long d_logits = device_alloc(sizeof logits, 0);
        alphamoe_device_attributes a = {sizeof a};
        CHECK(L.alphamoe_device_attributes_query_fn(0, &a) == ALPHAMOE_OK && a.compute_capability == cc,
              "device_attributes_query: sm_%d, describe said sm_%d", a.compute_capability, cc);
        CHECK(cu.MemcpyHtoD(d_logits, logits, sizeof logits) == 0, "cuMemcpyHtoD of the logits");
        const unsigned long long d_ids = device_alloc(sizeof ids, 0x5A), d_weights = device_alloc(sizeof weights, 0x5A);
        const unsigned long long d_sorted = device_alloc(4 * capacity, 0x5A);
        const unsigned long long d_blocks = device_alloc(4 * (capacity / BLOCK_M), 0x5A);
        const unsigned long long d_live = device_alloc(4, 0x5A), d_ws = device_alloc(z.workspace.bytes, 0);
        alphamoe_buffers db = {sizeof db, (int32_t *)(uintptr_t)d_ids, (float *)(uintptr_t)d_weights,
                               (int32_t *)(uintptr_t)d_sorted, (int32_t *)(uintptr_t)d_blocks,
                               (int32_t *)(uintptr_t)d_live};
        db.sorted_token_ids_capacity = capacity;
        db.expert_ids_capacity = capacity / BLOCK_M;
        db.workspace = (void *)(uintptr_t)d_ws;
        db.workspace_bytes = (size_t)z.workspace.bytes;
        const alphamoe_status s = L.alphamoe_route_fn(router, M, (const float *)(uintptr_t)d_logits, &db, NULL);
        CHECK(s == ALPHAMOE_OK, "alphamoe_route on %s (sm_%d, image %d): %s", name, cc, image,
              L.alphamoe_status_string_fn(s));
        CHECK(cu.CtxSynchronize() == 0, "the route kernel failed");
        static int32_t g_ids[M * K], g_sorted[sizeof sorted / 4], g_blocks[sizeof blocks / 4];
        static float g_weights[M * K];
        int32_t g_live = 0;
        device_read(g_ids, d_ids, sizeof g_ids);
        device_read(g_weights, d_weights, sizeof g_weights);
        device_read(g_sorted, d_sorted, 4 * capacity);
        device_read(g_blocks, d_blocks, 4 * (capacity / BLOCK_M));
        device_read(&g_live, d_live, 4);
        const outputs gpu = {g_ids, g_weights, g_sorted, g_blocks, g_live, capacity};
        if (s == ALPHAMOE_OK && check_contract("GPU", logits, &gpu) == 0) {
            CHECK(memcmp(g_ids, ids, sizeof ids) == 0, "GPU and CPU ids differ");
            CHECK(g_live == live && memcmp(g_sorted, sorted, 4 * (size_t)live) == 0, "GPU and CPU plans differ");
            printf("GPU route on %s (sm_%d, image sm_%d): %d tokens match the CPU reference\n", name, cc, image, M);
        }
        const unsigned long long allocated[] = {d_logits, d_ids, d_weights, d_sorted, d_blocks, d_live, d_ws};
        for (size_t i = 0; i < sizeof allocated / sizeof allocated[0]; ++i) cu.MemFree(allocated[i]);
    }

    L.alphamoe_router_destroy_fn(router);
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
