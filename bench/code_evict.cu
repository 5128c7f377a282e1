// The instruction-cache eviction of alphamoe-bench --cold-code. The L2
// memset before each sample evicts data and code from L2, but each SM's
// instruction caches keep the router's code from the sample before, which
// a serving engine's other kernels would have evicted. This kernel, run on
// every SM after the memset, executes kEvictBlocks * 4096 straight-line
// instructions (16 bytes each, 512 KiB), more than those caches hold, so
// the sample's kernels fetch their code from device memory.
//
// The code is split into functions of 4096 instructions, each compiled on
// its own: one straight body of that size takes the compiler minutes.
#include <stdint.h>

namespace {

constexpr int kEvictBlocks = 8;
constexpr int kInstructionsPerBlock = 4096;
constexpr int kInstructionBytes = 16;

// One multiply-add the compiler can neither fold nor drop (m is only known
// at run time, and the statement is volatile).
#define CODE_EVICT_STEP asm volatile("mad.lo.u32 %0, %0, %1, 40503;" : "+r"(x) : "r"(m));
#define CODE_EVICT_X4(s) s s s s
#define CODE_EVICT_X16(s) CODE_EVICT_X4(CODE_EVICT_X4(s))
#define CODE_EVICT_X4096(s) CODE_EVICT_X16(CODE_EVICT_X16(CODE_EVICT_X16(s)))

// Distinct per kBlock: each instance is its own stretch of code.
template <int kBlock>
__device__ __noinline__ uint32_t evict_block(uint32_t x, uint32_t m) {
    CODE_EVICT_X4096(CODE_EVICT_STEP)
    return x + kBlock;
}

}  // namespace

// Every warp of every CTA runs all of the code: launch enough CTAs of a
// few warps that each SM and each of its schedulers takes some.
extern "C" __global__ void bench_code_evict(uint32_t m, uint32_t *sink) {
    uint32_t x = threadIdx.x;
    x = evict_block<0>(x, m);
    x = evict_block<1>(x, m);
    x = evict_block<2>(x, m);
    x = evict_block<3>(x, m);
    x = evict_block<4>(x, m);
    x = evict_block<5>(x, m);
    x = evict_block<6>(x, m);
    x = evict_block<7>(x, m);
    static_assert(kEvictBlocks == 8, "one call per block above");
    // Never true for the m the benchmark passes (odd): keeps x alive.
    if (x == 0xFFFFFFFFu && m == 0) *sink = x;
}

extern "C" const void *bench_code_evict_kernel(void) { return reinterpret_cast<const void *>(&bench_code_evict); }

extern "C" int64_t bench_code_evict_bytes(void) {
    return int64_t{kEvictBlocks} * kInstructionsPerBlock * kInstructionBytes;
}
