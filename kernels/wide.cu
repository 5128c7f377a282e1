// The wide kernels (routing 3 in variants.def): rows of more than
// kMaxExperts experts (up to kWideMaxExperts) or more than kMaxTopK chosen
// a token (up to kWideMaxTopK), every routing flavour but groups and hash
// routing, in one body for the three specializations: tiny is one CTA,
// small and large a cooperative grid that the host sizes. The narrow
// kernels' plans keep a thread per expert and 16-bit ids; here a warp
// ranks a token, each CTA counts its pairs per warp and expert in dynamic
// shared memory, and the grid turns the counts into positions at two grid
// barriers: each CTA scans a slice of the experts' columns of the count
// table, so no CTA reads more than about two rows of it
// (e2048-m2048-k32-bm64, e896-m2048-k16-bm64-kimi-k3).
//
// Order inside an expert's group is ascending pair index, as in every
// kernel: a warp owns a contiguous run of tokens, its counts become
// exclusive prefixes over warps, CTAs and experts, and it replays its
// tokens in order.
#include <float.h>

#include "common/dependent_launch.cuh"
#include "common/entry_point.cuh"
#include "common/flavour.cuh"
#include "common/grid_barrier.cuh"
#include "common/route_cta.cuh"

using namespace alphamoe;

namespace {

static_assert(kWarpsPerBlock * 32 == kBlockThreads, "a warp a token in flight");

// The dynamic shared memory of a wide CTA (kWideSharedBytes, route_args.h,
// which the host reserves).
struct WideShared {
    // Per warp and plan expert: pairs counted while ranking, then the
    // position of the warp's next pair of that expert.
    int32_t warp_counts[kWarpsPerBlock][kWideMaxExperts];
    int32_t offset[kWideMaxExperts + 1];  // padded group starts; [L] = live length
    int32_t total[kWideMaxExperts];       // pairs per expert over the call
    int32_t before[kWideMaxExperts];      // pairs per expert in earlier CTAs
    WideRankScratch rank[kWarpsPerBlock];
    int32_t scan_scratch[kWarpsPerBlock];
};
static_assert(sizeof(WideShared) <= kWideSharedBytes, "the host reserves the CTA's shared memory");

__device__ __forceinline__ WideShared &wide_shared() {
    extern __shared__ __align__(16) unsigned char wide_smem[];
    return *reinterpret_cast<WideShared *>(wide_smem);
}

// The per-expert score of a sigmoid or sqrt-softplus call (kFlagSqrtSoftplus
// names the latter: these kernels score either at run time).
__device__ __forceinline__ float wide_score(const RouteArgs &a, float x) {
    return (a.flags & kFlagSqrtSoftplus) ? alphamoe_sqrt_softplus(x) : alphamoe_sigmoid(x);
}

// Keys fl(score(x) + b) of the slots in the row, kNoCandidateKey past it.
template <int S, class Score>
__device__ __forceinline__ void biased_keys(const RouteArgs &a, const float (&x)[S], int n_candidates, int lane,
                                            uint32_t (&key)[S], Score score) {
#pragma unroll
    for (int i = 0; i < S; ++i) {
        const int e = i * 32 + lane;
        key[i] = e < n_candidates ? ordered_key(alphamoe_biased_score(score(x[i]), __ldg(a.correction_bias + e)))
                                  : kNoCandidateKey;
    }
}

// The token's ranking keys (contract: the logits, or with a correction
// bias fl(score + b)); slots past the candidates hold kNoCandidateKey.
// Every load of the row is issued before any key is formed.
template <int S>
__device__ __forceinline__ void wide_keys(const RouteArgs &a, const char *row, int n_candidates, int lane,
                                          uint32_t (&key)[S]) {
    float x[S];
#pragma unroll
    for (int i = 0; i < S; ++i) x[i] = i * 32 + lane < n_candidates ? load_logit<true>(a, row, i * 32 + lane) : 0.0f;
    if (!(a.flags & kFlagCorrectionBias)) {
#pragma unroll
        for (int i = 0; i < S; ++i) key[i] = i * 32 + lane < n_candidates ? ordered_key(x[i]) : kNoCandidateKey;
        return;
    }
    // One scoring's code a call: a branch on the scoring per slot would lay
    // both scorings' code out slot after slot, and a warp ranking one token
    // waits on the fetch of every instruction it passes
    // (e896-m1-k16-bm64-kimi-k3).
    if (a.flags & kFlagSqrtSoftplus)
        biased_keys<S>(a, x, n_candidates, lane, key, [](float v) { return alphamoe_sqrt_softplus(v); });
    else
        biased_keys<S>(a, x, n_candidates, lane, key, [](float v) { return alphamoe_sigmoid(v); });
}

// The sum of x over the warp's 32 lanes, the same bits in every lane (a
// butterfly: every lane adds the same pairs).
__device__ __forceinline__ float sum_of_32_lanes(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(kFullMask, x, offset);
    return x;
}

__device__ __forceinline__ float max_of_32_lanes(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) x = fmaxf(x, __shfl_xor_sync(kFullMask, x, offset));
    return x;
}

// The gate weight of each active lane's chosen expert (logit x), every
// flavour but the full-row softmax, with the contract's non-finite rules.
__device__ __forceinline__ float wide_chosen_weight(const RouteArgs &a, float x, bool active) {
    const bool renormalize = !(a.flags & kFlagNoRenormalize);
    if (!(a.flags & (kFlagSigmoid | kFlagSqrtSoftplus))) {  // the renormalized softmax
        const bool counted = active && !isnan(x);
        const float largest = max_of_32_lanes(counted ? x : -INFINITY);
        const int n_inf = __popc(__ballot_sync(kFullMask, counted && x == INFINITY));
        const float e = counted ? expf(x - largest) : 0.0f;
        const float sum = sum_of_32_lanes(e);
        if (largest == INFINITY) return counted && x == INFINITY ? 1.0f / static_cast<float>(n_inf) : 0.0f;
        return largest > -INFINITY ? e / sum : 0.0f;
    }
    float s = active ? wide_score(a, x) : 0.0f;
    if (isnan(s)) s = 0.0f;
    if (!renormalize) return s;
    const float sum = sum_of_32_lanes(s);
    const int n_inf = __popc(__ballot_sync(kFullMask, s == INFINITY));  // sqrt-softplus of +inf only
    if (n_inf > 0) return s == INFINITY ? 1.0f / static_cast<float>(n_inf) : 0.0f;
    return sum > 0.0f ? s / sum : 0.0f;
}

// The full-row softmax probability of each active lane's logit
// (ALPHAMOE_FLAG_NO_RENORMALIZE with softmax scoring): the largest and the
// sum run over every logit of the row, the shared column included.
__device__ __forceinline__ float wide_full_row_softmax(const RouteArgs &a, const char *row, int lane, float x,
                                                       bool active) {
    float m = -INFINITY;
    uint32_t n_inf = 0;
    for (int e = lane; e < a.num_experts; e += 32) {
        const float v = load_logit<true>(a, row, e);
        if (!isnan(v)) m = fmaxf(m, v);
        n_inf += v == INFINITY ? 1u : 0u;
    }
    m = max_of_32_lanes(m);
    if (m == INFINITY) {
        n_inf = __reduce_add_sync(kFullMask, n_inf);
        return active && x == INFINITY ? 1.0f / static_cast<float>(n_inf) : 0.0f;
    }
    if (!(m > -INFINITY)) return 0.0f;
    float sum = 0.0f;
    for (int e = lane; e < a.num_experts; e += 32) {
        const float v = load_logit<true>(a, row, e);
        if (!isnan(v)) sum += expf(v - m);
    }
    sum = sum_of_32_lanes(sum);
    return active && !isnan(x) ? expf(x - m) / sum : 0.0f;
}

// Ranks, writes and tallies the warp's tokens: lane j < k writes pair j's
// id and weight and counts it for its local expert in the warp's row.
template <int S, bool kShared>
__device__ __forceinline__ void wide_select_tokens(const RouteArgs &a, WideShared &sh, TokenRange range, int warp,
                                                   int lane) {
    const RankedExperts r = ranked_experts<kShared>(a);
    const int k = a.top_k;
    for (int32_t t = range.begin; t < range.end; ++t) {
        const char *row = token_row<true>(a, t);
        uint32_t key[S];
        wide_keys<S>(a, row, r.n_candidates, lane, key);
        int32_t id = -1;
        wide_rank_keys<S>(key, r.n_select, lane, sh.rank[warp], id);
        if (kShared && lane == k - 1) id = r.shared_id;
        const bool active = lane < k;
        const float x = active ? load_logit<true>(a, row, id) : 0.0f;
        float w = (a.flags & (kFlagSigmoid | kFlagSqrtSoftplus | kFlagNoRenormalize)) == kFlagNoRenormalize
                      ? wide_full_row_softmax(a, row, lane, x, active)
                      : wide_chosen_weight(a, x, active);
        if (a.scale != 1.0f) w *= a.scale;
        if (a.flags & kFlagSqrtSoftplus) w = fminf(w, FLT_MAX);
        if (active) {
            const int64_t pair = static_cast<int64_t>(t) * k + lane;
            a.topk_ids[pair] = id;
            a.topk_weights[pair] = w;
            const int32_t local = local_expert(a, id);
            if (local >= 0) atomicAdd(&sh.warp_counts[warp][local], 1);
        }
    }
}

// Every thread of the grid: turns each CTA's counts (sh.total, per
// expert) into the pairs of earlier CTAs (sh.before) and the call's totals
// (sh.total), through the count table: each CTA publishes its row; after a
// grid barrier CTA c scans the columns of its slice of experts, writing
// each row's exclusive prefix back in place and the totals into row
// gridDim.x; after a second barrier each CTA reads its row and the totals.
// A column's CTAs are split over a group of Z lanes, 8 rows a lane.
__device__ __forceinline__ void wide_exchange(const RouteArgs &a, WideShared &sh) {
    const int L = a.plan_experts;
    const int G = static_cast<int>(gridDim.x);
    int32_t *table = reinterpret_cast<int32_t *>(a.workspace + kWsCountTableWord);
    for (int e = threadIdx.x; e < L; e += kBlockThreads) __stcg(table + blockIdx.x * L + e, sh.total[e]);
    grid_barrier(a.workspace + kWsBarrierWord, gridDim.x);
    constexpr int kRowsPerLane = 8;
    int z = 1;
    while (z * kRowsPerLane < G) z <<= 1;  // G <= kWideMaxGridCtas < 32 * 8
    const int slice = (L + G - 1) / G;
    const int first = blockIdx.x * slice;
    const int last = min(L, first + slice);
    const int member = threadIdx.x & (z - 1);
    const int groups = kBlockThreads / z;
    for (int base = 0; base < slice; base += groups) {  // the same trips in every lane of a warp
        const int e = first + base + static_cast<int>(threadIdx.x) / z;
        const bool mine = e < last;
        int32_t v[kRowsPerLane];
        int32_t sum = 0;
#pragma unroll
        for (int i = 0; i < kRowsPerLane; ++i) {
            const int c = member * kRowsPerLane + i;
            v[i] = mine && c < G ? __ldcg(table + c * L + e) : 0;
            sum += v[i];
        }
        // The exclusive prefix of the lane's sum over its group of z lanes.
        int32_t inclusive = sum;
        for (int offset = 1; offset < z; offset <<= 1) {
            const int32_t up = __shfl_up_sync(kFullMask, inclusive, offset, z);
            if (member >= offset) inclusive += up;
        }
        int32_t running = inclusive - sum;
#pragma unroll
        for (int i = 0; i < kRowsPerLane; ++i) {
            const int c = member * kRowsPerLane + i;
            if (mine && c < G) __stcg(table + c * L + e, running);
            running += v[i];
        }
        if (mine && member == z - 1) __stcg(table + G * L + e, running);
    }
    grid_barrier(a.workspace + kWsBarrierWord, gridDim.x);
    for (int e = threadIdx.x; e < L; e += kBlockThreads) {
        sh.before[e] = __ldcg(table + blockIdx.x * L + e);
        sh.total[e] = __ldcg(table + G * L + e);
    }
    __syncthreads();
}

// The local expert whose padded group holds plan position pos < live: the
// last e with offset[e] <= pos (groups of no pairs take no room).
__device__ __forceinline__ int expert_at(const WideShared &sh, int L, int32_t pos) {
    int lo = 0, hi = L;  // offset[lo] <= pos < offset[hi]
    while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (sh.offset[mid] <= pos) lo = mid;
        else hi = mid;
    }
    return lo;
}

template <class Variant, int kSlots>
__device__ __forceinline__ void route_wide(const RouteArgs &a) {
    WideShared &sh = wide_shared();
    wait_for_preceding_kernel();
    if (route_empty_call(a)) {
        allow_dependent_launch();
        return;
    }
    const int L = a.plan_experts;
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    // Each warp clears its own row, 16 bytes a lane a step.
    int4 *row = reinterpret_cast<int4 *>(sh.warp_counts[warp]);
    for (int q = lane; q < (L + 3) / 4; q += 32) row[q] = make_int4(0, 0, 0, 0);
    __syncthreads();
    const TokenRange range = cta_token_range(a, blockIdx.x);
    const TokenRange warp_range = warp_token_range(range, warp);
    wide_select_tokens<kSlots, kSharedExpert>(a, sh, warp_range, warp, lane);
    allow_dependent_launch();
    __syncthreads();
    // The warps' counts as exclusive prefixes over the CTA's warps.
    for (int e = threadIdx.x; e < L; e += kBlockThreads) {
        int32_t running = 0;
#pragma unroll
        for (int w = 0; w < kWarpsPerBlock; ++w) {
            const int32_t c = sh.warp_counts[w][e];
            sh.warp_counts[w][e] = running;
            running += c;
        }
        sh.total[e] = running;
        sh.before[e] = 0;
    }
    __syncthreads();
    if (gridDim.x > 1) wide_exchange(a, sh);  // uniform: the grid's size
    // Padded group starts: thread i scans experts 4i .. 4i + 3.
    constexpr int kPerThread = kWideMaxExperts / kBlockThreads;
    int32_t padded[kPerThread], sum = 0;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int e = threadIdx.x * kPerThread + i;
        padded[i] = e < L ? (block_m_divide(a, sh.total[e] + a.block_m - 1)) * a.block_m : 0;
        sum += padded[i];
    }
    int32_t live;
    int32_t at = block_exclusive_scan(sum, sh.scan_scratch, &live);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int e = threadIdx.x * kPerThread + i;
        if (e < L) sh.offset[e] = at;
        at += padded[i];
    }
    if (threadIdx.x == 0) sh.offset[L] = live;
    __syncthreads();
    for (int e = threadIdx.x; e < L; e += kBlockThreads) {
        const int32_t base = sh.offset[e] + sh.before[e];
#pragma unroll
        for (int w = 0; w < kWarpsPerBlock; ++w) sh.warp_counts[w][e] += base;
    }
    if (blockIdx.x == 0) {
        for (int e = threadIdx.x; e < L; e += kBlockThreads) {
            if (a.expert_counts) a.expert_counts[e] = sh.total[e];
            if (a.expert_offsets) a.expert_offsets[e] = sh.offset[e];
        }
        if (threadIdx.x == 0) {
            if (a.expert_offsets) a.expert_offsets[L] = live;
            *a.num_tokens_post_padded = live;
        }
    }
    // Padding, block experts and the tail, over the grid.
    const int32_t sentinel = a.num_tokens * a.top_k;
    const int32_t stride = static_cast<int32_t>(gridDim.x) * kBlockThreads;
    for (int32_t pos = blockIdx.x * kBlockThreads + threadIdx.x; pos < live; pos += stride) {
        const int e = expert_at(sh, L, pos);
        if (pos - sh.offset[e] >= sh.total[e]) a.sorted_token_ids[pos] = sentinel;
        const int32_t block = block_m_divide(a, pos);
        if (block * a.block_m == pos) a.expert_ids[block] = e;
    }
    if (a.flags & kFlagTailFill) {
        for (int32_t pos = live + blockIdx.x * kBlockThreads + threadIdx.x; pos < a.capacity; pos += stride) {
            a.sorted_token_ids[pos] = sentinel;
            const int32_t block = block_m_divide(a, pos);
            if (block * a.block_m == pos) a.expert_ids[block] = -1;
        }
    }
    __syncthreads();
    // Placement: the warp's pairs in order; pairs of one token that share a
    // local expert (an expert map) take consecutive places in lane order.
    const int k = a.top_k;
    for (int32_t t = warp_range.begin; t < warp_range.end; ++t) {
        const int64_t pair = static_cast<int64_t>(t) * k + lane;
        const bool active = lane < k;
        const int32_t local = active ? local_expert(a, a.topk_ids[pair]) : -1;
        const unsigned peers = __match_any_sync(kFullMask, local >= 0 ? local : -1 - lane);
        const int rank = __popc(peers & ((1u << lane) - 1u));
        int32_t pos = -1;
        if (local >= 0) {
            pos = sh.warp_counts[warp][local] + rank;
            a.sorted_token_ids[pos] = static_cast<int32_t>(pair);
        }
        if (active && a.pair_to_sorted) a.pair_to_sorted[pair] = pos;
        __syncwarp();
        if (local >= 0 && rank == 0) sh.warp_counts[warp][local] += __popc(peers);
        __syncwarp();
    }
}

// The three specializations of variants.def: one CTA, or a co-resident grid.
template <class Variant, int kSlots>
__device__ __forceinline__ void tiny(const RouteArgs &a) {
    route_wide<Variant, kSlots>(a);
}
template <class Variant, int kSlots>
__device__ __forceinline__ void small(const RouteArgs &a) {
    route_wide<Variant, kSlots>(a);
}
template <class Variant, int kSlots>
__device__ __forceinline__ void large(const RouteArgs &a) {
    route_wide<Variant, kSlots>(a);
}

}  // namespace
