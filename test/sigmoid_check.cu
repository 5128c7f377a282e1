// The kernels' sigmoid (sigmoid_scores.cuh) against score_math.h's, both on
// the device, over every 32-bit input: the kernels' version replaces the
// IEEE division by a shorter sequence that must round the same way.
#include <stdint.h>

#include "common/sigmoid_scores.cuh"
#include "sigmoid_check.h"

namespace {

constexpr int kPerCall = 4;  // values per sigmoid_scores call, like a lane's slots
constexpr uint64_t kInputs = uint64_t{1} << 32;

__device__ void record_mismatch(sigmoid_check_result *result, uint32_t input, uint32_t got, uint32_t want) {
    if (atomicAdd(&result->mismatches, 1ull) == 0) {
        result->input = input;
        result->got = got;
        result->want = want;
    }
}

__global__ void sigmoid_check_all(sigmoid_check_result *result) {
    const uint64_t stride = uint64_t{gridDim.x} * blockDim.x * kPerCall;
    unsigned long long checked = 0;
    for (uint64_t first = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) * kPerCall; first < kInputs;
         first += stride) {
        float x[kPerCall], score[kPerCall];
#pragma unroll
        for (int i = 0; i < kPerCall; ++i) x[i] = __uint_as_float(static_cast<uint32_t>(first + i));
        alphamoe::sigmoid_scores<kPerCall>(x, score);
#pragma unroll
        for (int i = 0; i < kPerCall; ++i) {
            const uint32_t want = __float_as_uint(alphamoe_sigmoid(x[i]));
            if (__float_as_uint(score[i]) != want)
                record_mismatch(result, __float_as_uint(x[i]), __float_as_uint(score[i]), want);
            // The one-value form too (the gate weights use it).
            const uint32_t single = __float_as_uint(alphamoe::sigmoid_score(x[i]));
            if (single != want) record_mismatch(result, __float_as_uint(x[i]), single, want);
        }
        checked += kPerCall;
    }
    atomicAdd(&result->checked, checked);
}

}  // namespace

extern "C" cudaError_t sigmoid_check_launch(int32_t ctas, sigmoid_check_result *result) {
    sigmoid_check_all<<<ctas, 256>>>(result);
    return cudaGetLastError();
}
