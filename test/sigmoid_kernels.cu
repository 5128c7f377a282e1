// The kernels' row sigmoid under test: see sigmoid_kernels.h.
#include "sigmoid_kernels.h"

#include "common/score_bounds.cuh"
#include "common/sigmoid_slots.cuh"

namespace {

constexpr int kThreads = 256;

__device__ void row_sigmoid(uint32_t first_bits, const uint32_t *input_bits, float (&score)[SIGMOID_ROW_SLOTS],
                            float (&x)[SIGMOID_ROW_SLOTS]) {
    float e[SIGMOID_ROW_SLOTS];
#pragma unroll
    for (int i = 0; i < SIGMOID_ROW_SLOTS; ++i) {
        x[i] = __uint_as_float(input_bits ? input_bits[i] : first_bits + i);
        e[i] = alphamoe_sigmoid_exp(x[i]);
    }
    alphamoe::sigmoid_finish_slots(x, e, score);
}

__global__ void sweep_all_inputs(sigmoid_sweep *result) {
    const uint64_t rows = (1ull << 32) / SIGMOID_ROW_SLOTS;
    unsigned long long mismatches = 0, divided = 0;
    for (uint64_t row = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; row < rows;
         row += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const uint32_t first = static_cast<uint32_t>(row * SIGMOID_ROW_SLOTS);
        float score[SIGMOID_ROW_SLOTS], x[SIGMOID_ROW_SLOTS];
        row_sigmoid(first, nullptr, score, x);
#pragma unroll
        for (int i = 0; i < SIGMOID_ROW_SLOTS; ++i) {
            const float expected = alphamoe_sigmoid(x[i]);
            divided += alphamoe::sigmoid_needs_division(x[i], alphamoe_sigmoid_exp(x[i])) ? 1 : 0;
            if (__float_as_uint(score[i]) != __float_as_uint(expected)) {
                ++mismatches;
                // The smallest input wins. Its bits are a diagnostic: with
                // several mismatches they may be another one's.
                const uint32_t before = atomicMin(&result->first_mismatch, first + i);
                if (first + i < before) {
                    atomicExch(&result->first_mismatch_bits, __float_as_uint(score[i]));
                    atomicExch(&result->first_expected_bits, __float_as_uint(expected));
                }
            }
        }
    }
    atomicAdd(&result->mismatches, mismatches);
    atomicAdd(&result->divided, divided);
}

__global__ void rows_of(const uint32_t *input_bits, uint32_t *output_bits, int32_t rows) {
    const int32_t row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float score[SIGMOID_ROW_SLOTS], x[SIGMOID_ROW_SLOTS];
    row_sigmoid(0, input_bits + row * SIGMOID_ROW_SLOTS, score, x);
#pragma unroll
    for (int i = 0; i < SIGMOID_ROW_SLOTS; ++i) output_bits[row * SIGMOID_ROW_SLOTS + i] = __float_as_uint(score[i]);
}

// The spacing of binary32 numbers at v >= 0, at least the smallest subnormal.
__device__ double float_spacing(double v) {
    int e;
    frexp(v, &e);
    return fmax(ldexp(1.0, e - 24), ldexp(1.0, -149));
}

__global__ void sweep_sqrt_softplus(double max_ulp, sqrt_softplus_sweep *result) {
    unsigned long long over = 0;
    uint32_t worst_milli = 0, worst_input = 0;
    for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < (1ull << 32);
         i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const uint32_t bits = static_cast<uint32_t>(i);
        const float x = __uint_as_float(bits);
        const float s = alphamoe_sqrt_softplus(x);
        const uint32_t sb = __float_as_uint(s);
        uint32_t milli;
        if (isnan(x)) {
            milli = sb == (bits | 0x00400000u) ? 0u : 0xffffffffu;
        } else if (sb == 0x80000000u || (isinf(s) && !isinf(x)) || s < 0.0f) {
            milli = 0xffffffffu;
        } else if (isinf(x)) {
            milli = (x > 0.0f ? sb == 0x7f800000u : sb == 0u) ? 0u : 0xffffffffu;
        } else {
            const double d = x;
            const double want = sqrt(d > 0.0 ? d + log1p(exp(-d)) : log1p(exp(d)));
            const double err = fabs(static_cast<double>(s) - want) / float_spacing(want);
            milli = static_cast<uint32_t>(fmin(err * 1000.0, 4.0e9));
            if (err > max_ulp) ++over;
        }
        if (milli == 0xffffffffu) ++over;
        if (milli > worst_milli) {
            worst_milli = milli;
            worst_input = bits;
        }
    }
    const uint32_t before = atomicMax(&result->worst_ulp_milli, worst_milli);
    if (worst_milli > before) atomicExch(&result->worst_input, worst_input);
    atomicAdd(&result->over_bound, over);
}

// Whether lo <= score <= hi, NaN bounds standing for a NaN score only.
__device__ bool bounds_hold(float lo, float score, float hi) {
    if (isnan(score)) return isnan(lo) && isnan(hi);
    return lo <= score && score <= hi;
}

// Every input's bounds (score_bounds.cuh) against the exact score.
__global__ void sweep_score_bounds(score_bounds_sweep *result) {
    unsigned long long outside = 0, tight = 0;
    uint32_t first = 0xffffffffu;
    for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < (1ull << 32);
         i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        const uint32_t bits = static_cast<uint32_t>(i);
        const float x = __uint_as_float(bits);
        float lo, hi;
        alphamoe::sqrt_softplus_bounds(x, lo, hi);
        const float score = alphamoe_sqrt_softplus(x);
        if (!bounds_hold(lo, score, hi)) {
            ++outside;
            first = min(first, bits);
        } else if (score > 0x1p-100f && score < 0x1p100f && hi - lo <= score * 0x1p-10f) {
            ++tight;
        }
    }
    atomicAdd(&result->outside, outside);
    atomicAdd(&result->tight, tight);
    atomicMin(&result->first_outside, first);
}

__global__ void sqrt_softplus_kernel(const uint32_t *in, uint32_t *out, int32_t n) {
    const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float_as_uint(alphamoe_sqrt_softplus(__uint_as_float(in[i])));
}

}  // namespace

// A sweep over every input: `start` copied to the device, launch(device
// copy, blocks) run there (8 CTAs a multiprocessor), the result copied back.
template <class Result, class Launch>
cudaError_t sweep_on_device(const Result &start, Result *result, Launch launch) {
    Result *device = nullptr;
    cudaError_t status = cudaMalloc(&device, sizeof *device);
    if (status != cudaSuccess) return status;
    status = cudaMemcpy(device, &start, sizeof start, cudaMemcpyHostToDevice);
    int device_index = 0, sms = 0;
    if (status == cudaSuccess) status = cudaGetDevice(&device_index);
    if (status == cudaSuccess) status = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_index);
    if (status == cudaSuccess) {
        launch(device, sms * 8);
        status = cudaGetLastError();
    }
    if (status == cudaSuccess) status = cudaMemcpy(result, device, sizeof *result, cudaMemcpyDeviceToHost);
    cudaFree(device);
    return status;
}

extern "C" cudaError_t sqrt_softplus_sweep_all_inputs(double max_ulp, sqrt_softplus_sweep *result) {
    return sweep_on_device(sqrt_softplus_sweep{}, result, [max_ulp](sqrt_softplus_sweep *device, int blocks) {
        sweep_sqrt_softplus<<<blocks, kThreads>>>(max_ulp, device);
    });
}

// n input bit patterns copied to the device, launch(in, out) run there,
// n output bit patterns copied back.
template <class Launch>
cudaError_t through_device(const uint32_t *input_bits, uint32_t *output_bits, int32_t n, Launch launch) {
    const size_t bytes = static_cast<size_t>(n) * sizeof(uint32_t);
    uint32_t *in = nullptr, *out = nullptr;
    cudaError_t status = cudaMalloc(&in, bytes);
    if (status == cudaSuccess) status = cudaMalloc(&out, bytes);
    if (status == cudaSuccess) status = cudaMemcpy(in, input_bits, bytes, cudaMemcpyHostToDevice);
    if (status == cudaSuccess) {
        launch(in, out);
        status = cudaGetLastError();
    }
    if (status == cudaSuccess) status = cudaMemcpy(output_bits, out, bytes, cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(out);
    return status;
}

extern "C" cudaError_t sqrt_softplus_of(const uint32_t *input_bits, uint32_t *output_bits, int32_t n) {
    return through_device(input_bits, output_bits, n, [n](const uint32_t *in, uint32_t *out) {
        sqrt_softplus_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(in, out, n);
    });
}

extern "C" cudaError_t sigmoid_sweep_all_inputs(sigmoid_sweep *result) {
    sigmoid_sweep start = {};
    start.first_mismatch = 0xffffffffu;
    return sweep_on_device(start, result,
                           [](sigmoid_sweep *device, int blocks) { sweep_all_inputs<<<blocks, kThreads>>>(device); });
}

extern "C" cudaError_t score_bounds_sweep_all_inputs(score_bounds_sweep *result) {
    score_bounds_sweep start = {};
    start.first_outside = 0xffffffffu;
    return sweep_on_device(start, result, [](score_bounds_sweep *device, int blocks) {
        sweep_score_bounds<<<blocks, kThreads>>>(device);
    });
}

extern "C" cudaError_t sigmoid_rows_of(const uint32_t *input_bits, uint32_t *output_bits, int32_t n) {
    const int32_t rows = n / SIGMOID_ROW_SLOTS;
    return through_device(input_bits, output_bits, n, [rows](const uint32_t *in, uint32_t *out) {
        rows_of<<<(rows + kThreads - 1) / kThreads, kThreads>>>(in, out, rows);
    });
}
