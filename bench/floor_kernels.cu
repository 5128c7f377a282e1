// The reference kernels of alphamoe-bench: the floors a router launch is
// compared against, and the producer that stands in front of the router in
// the programmatic-dependent-launch measurement. The benchmark itself is C;
// it reaches these kernels only through the accessors at the bottom.
#include <stdint.h>

#include "common/grid_barrier.cuh"
#include "floor_kernels.h"
#include "route_args.h"

// The cost of any launch: nothing to do.
extern "C" __global__ void bench_floor_empty() {}

// The cost of one grid-wide barrier: launched cooperatively with one CTA per
// multiprocessor, it crosses the barrier the router's cooperative kernels
// use, once, and does nothing else. The workspace holds the barrier words,
// zeroed once when allocated.
extern "C" __global__ void bench_floor_grid_barrier(uint32_t *workspace) {
    alphamoe::grid_barrier(workspace + kWsBarrierWord, gridDim.x);
}

// A row of E512 logits (FLOOR_ROW_FLOATS), read by one warp coalesced, 16
// floats a lane, and its maximum stored by lane 0: a memory round trip and
// a store that waits for it.
static_assert(FLOOR_ROW_FLOATS == 16 * 32, "a row is 16 floats a lane");

__device__ __forceinline__ void store_row_maximum(const float *row, float *out, unsigned lane) {
    float best = row[lane];
#pragma unroll
    for (int i = 1; i < 16; ++i) best = fmaxf(best, row[i * 32 + lane]);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, offset));
    if (lane == 0) *out = best;
}

// The least a one-token router can cost: a launch and one row read from
// memory (L2 evicted, like the router's) by warp 0; the other warps only
// launch.
extern "C" __global__ void bench_floor_one_row(const float *row, float *out) {
    if (threadIdx.x >= 32) return;
    store_row_maximum(row, out, threadIdx.x);
}

// The least a call of a few tokens can cost, its rows read as the tiny
// kernel reads them: warp w < n_rows reads row w (consecutive rows) and
// stores its maximum to out[w]; the other warps only launch.
extern "C" __global__ void bench_floor_rows(const float *rows, int32_t n_rows, float *out) {
    const int warp = threadIdx.x >> 5;
    if (warp >= n_rows) return;
    store_row_maximum(rows + warp * FLOOR_ROW_FLOATS, out + warp, threadIdx.x & 31);
}

// The least time the logits' read alone takes, L2 evicted: every 16-byte
// word of `quads` read once, two loads in flight per thread a step, over a
// grid of many small CTAs (the fastest of the layouts tried for this
// floor), cached as streaming data as the router reads them
// (kernels/common/streamed_load.cuh). The sum is stored only if negative,
// which the floor's buffer (bytes 0x3c, small positive floats) never
// gives, and which the compiler cannot rule out: the loads stay.
extern "C" __global__ void bench_floor_read(const float4 *quads, int64_t count, float *out) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (; i + stride < count; i += 2 * stride) {
        const float4 a = __ldcs(quads + i), b = __ldcs(quads + i + stride);
        sum += (a.x + a.y) + (a.z + a.w) + (b.x + b.y) + (b.z + b.w);
    }
    if (i < count) {
        const float4 a = __ldcs(quads + i);
        sum += (a.x + a.y) + (a.z + a.w);
    }
    if (sum < 0.0f) *out = sum;
}

// The same reads through the bulk copy engine: one thread a CTA keeps
// READ_BULK_STAGES chunks of READ_BULK_CHUNK_BYTES on their way into shared
// memory (cp.async.bulk), each completing on its own barrier, so the bytes
// in flight on a multiprocessor depend on neither registers nor threads.
// Of the two reads the faster is the floor.
__device__ __forceinline__ uint32_t shared_address(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void bench_floor_read_bulk(const char *src, int64_t bytes, float *out) {
    extern __shared__ __align__(128) unsigned char stages[];
    __shared__ __align__(8) uint64_t landed[READ_BULK_STAGES];
    if (threadIdx.x != 0) return;
    for (int s = 0; s < READ_BULK_STAGES; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&landed[s])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    const int64_t chunks = (bytes + READ_BULK_CHUNK_BYTES - 1) / READ_BULK_CHUNK_BYTES;
    const auto issue = [&](int64_t chunk, int s) {
        const int64_t at = chunk * READ_BULK_CHUNK_BYTES;
        const uint32_t n = static_cast<uint32_t>(bytes - at < READ_BULK_CHUNK_BYTES ? bytes - at : READ_BULK_CHUNK_BYTES);
        const uint32_t bar = shared_address(&landed[s]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(n) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         shared_address(stages + s * READ_BULK_CHUNK_BYTES)),
                     "l"(src + at), "r"(n), "r"(bar)
                     : "memory");
    };
    int64_t next = blockIdx.x;
    for (int s = 0; s < READ_BULK_STAGES && next < chunks; ++s, next += gridDim.x) issue(next, s);
    uint32_t parities = 0;
    int s = 0;
    for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        asm volatile(
            "{\n"
            ".reg .pred done;\n"
            "WAIT_FOR_CHUNK:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
            "@!done bra WAIT_FOR_CHUNK;\n"
            "}\n" ::"r"(shared_address(&landed[s])),
            "r"((parities >> s) & 1u)
            : "memory");
        parities ^= 1u << s;
        if (next < chunks) {
            issue(next, s);
            next += gridDim.x;
        }
        s = s + 1 == READ_BULK_STAGES ? 0 : s + 1;
    }
    // Never true for the floor's buffer (bytes 0x3c), as in bench_floor_read.
    const float first = *reinterpret_cast<const float *>(stages);
    if (chunks > blockIdx.x && first < 0.0f) *out = first;
}

// splitmix64's finalizer: a well-mixed 64-bit value from an index.
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// What a router's producer (the gate projection) does, in miniature:
//   1. a compute phase: `work` dependent FMAs per thread in registers, the
//      stand-in for a GEMM main loop (a few microseconds);
//   2. griddepcontrol.launch_dependents: from here on the next kernel on the
//      stream, when launched with programmatic stream serialization, may be
//      scheduled; it still reads nothing before its griddepcontrol.wait,
//      which returns only once this whole grid has completed and its stores
//      are visible;
//   3. the epilogue: stores every logit, uniform in [-1, 1) from the seed
//      and the element index.
// Without programmatic serialization on the consumer the trigger is a no-op
// and the two kernels simply run one after the other.
extern "C" __global__ void bench_pdl_producer(float *logits, int64_t count, uint64_t seed, int32_t work) {
    float acc = static_cast<float>(threadIdx.x) * 1e-3f;
    for (int32_t i = 0; i < work; ++i) acc = fmaf(acc, 0.9999f, 1e-4f);
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const uint64_t bits = mix64(seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(i + 1));
        // 24 random bits are exactly what a float holds.
        logits[i] = static_cast<float>(bits >> 40) * 0x1.0p-23f - 1.0f;
    }
    // Never true (acc moves from [0, 0.26) towards 1 and stays in [0, 1]),
    // but the compiler cannot know: it keeps the compute phase alive.
    if (acc < -1.0f && count > 0) logits[0] = acc;
}

extern "C" const void *bench_floor_empty_kernel(void) { return reinterpret_cast<const void *>(&bench_floor_empty); }

extern "C" const void *bench_floor_one_row_kernel(void) { return reinterpret_cast<const void *>(&bench_floor_one_row); }

extern "C" const void *bench_floor_rows_kernel(void) { return reinterpret_cast<const void *>(&bench_floor_rows); }

extern "C" const void *bench_floor_read_kernel(void) { return reinterpret_cast<const void *>(&bench_floor_read); }

extern "C" const void *bench_floor_read_bulk_kernel(void) {
    return reinterpret_cast<const void *>(&bench_floor_read_bulk);
}

extern "C" const void *bench_floor_grid_barrier_kernel(void) {
    return reinterpret_cast<const void *>(&bench_floor_grid_barrier);
}

extern "C" const void *bench_pdl_producer_kernel(void) { return reinterpret_cast<const void *>(&bench_pdl_producer); }

// Words of the barrier workspace the grid-barrier floor needs: the small
// kernel's one barrier word, at the workspace's start.
extern "C" int32_t bench_floor_barrier_words(void) { return kWsBarrierWord + 1; }
