// The routing flavours' per-token steps (README's contract): logits of any
// element type as fp32, ranking keys with a correction bias, the grouped
// selection, the gate weights of every scoring and the local expert ids of
// expert parallelism. The scores and the bias arithmetic come from
// score_math.h, which the host reference shares bit for bit. The scoring
// of sigmoid and softmax calls is read from RouteArgs; sqrt-softplus calls
// run kernels of their own (kSqrtSoftplusScores), so that the others carry
// none of its code.
#ifndef ALPHAMOE_KERNELS_FLAVOUR_CUH
#define ALPHAMOE_KERNELS_FLAVOUR_CUH

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "common/entry_point.cuh"
#include "common/ordered_key.cuh"
#include "common/score_bounds.cuh"
#include "common/score_math.h"
#include "common/sigmoid_slots.cuh"
#include "common/streamed_load.cuh"
#include "common/warp_topk.cuh"
#include "route_args.h"

namespace alphamoe {

// kAnyType: the logits may have any element type; without it (the plain
// kernels' entry points for fp32 logits) they are fp32.
template <bool kAnyType>
__device__ __forceinline__ const char *token_row(const RouteArgs &a, int32_t t) {
    const int64_t element_bytes = !kAnyType || a.logits_type == kLogitsF32 ? 4 : 2;
    return static_cast<const char *>(a.logits) + static_cast<int64_t>(t) * a.row_stride * element_bytes;
}

// IEEE binary16 to binary32 by the conversion instruction. Exact, like
// score_math.h's alphamoe_f16_to_float that the host reference runs, for
// every number and infinity (binary16 is a subset of binary32, denormals
// are kept); a NaN may lose its payload, which no key or weight reads
// (ordered_key). That routine's branches, inlined for each slot of a row,
// cost the 16-bit rows a branch and a convergence barrier per slot, fp16
// or bf16 alike, since the type is known only at run time.
__device__ __forceinline__ float f16_bits_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ float half_to_float(unsigned short h, int32_t type) {
    return type == kLogitsBf16 ? alphamoe_bf16_to_float(h) : f16_bits_to_float(h);
}

// Logit e of a row, as fp32.
template <bool kAnyType>
__device__ __forceinline__ float load_logit(const RouteArgs &a, const char *row, int e) {
    if (!kAnyType || a.logits_type == kLogitsF32) return load_streamed(reinterpret_cast<const float *>(row) + e);
    return half_to_float(load_streamed(reinterpret_cast<const unsigned short *>(row) + e), a.logits_type);
}

// Issues every load of the slice before any is used, so they are all in
// flight at once. fp32 loads share one address, the lane's first element,
// at constant offsets, and slots past the candidates load nothing and hold
// -inf (what warp_rank_row needs of them). 16-bit slots past the candidates
// read the last candidate again (the same way there keeps the flavoured
// kernels within their registers). Either way every reader masks those
// slots by slot_in_row.
template <int S, bool kAnyType>
__device__ __forceinline__ RowSlice<S> load_row_slice(const RouteArgs &a, const char *row, int n_candidates,
                                                       int lane) {
    RowSlice<S> s;
    if (!kAnyType || a.logits_type == kLogitsF32) {
        const float *r = reinterpret_cast<const float *>(row) + lane;
#pragma unroll
        for (int i = 0; i < S; ++i)
            s.value[i] = slot_in_row<S>(i, lane, n_candidates) ? load_streamed(r + i * 32) : -INFINITY;
    } else {
        const unsigned short *r = reinterpret_cast<const unsigned short *>(row);
        unsigned short raw[S];
#pragma unroll
        for (int i = 0; i < S; ++i) raw[i] = load_streamed(r + min(i * 32 + lane, n_candidates - 1));
#pragma unroll
        for (int i = 0; i < S; ++i) s.value[i] = half_to_float(raw[i], a.logits_type);
    }
    return s;
}

// 16-bit logits in the entry points for them (_half_logits: every plain
// kernel's, for the plain softmax over them, and the flavoured large
// kernel's): a row's slots hold its bits until widen_half_row, so its
// loads stay in flight. Converted where they are issued, the next token's
// row, loaded while the current one is ranked (select_tokens), would be
// waited for there, before that ranking instead of during it
// (e512-m4096-k10-bm64-bf16). Entry points of their own, because in one
// entry point the loads of the two widths, on two sides of a branch, meet
// in moves that wait for them just the same, and the ways around that slow
// the fp32 calls. The flavoured tiny and small kernels, where the library
// picks them, hold a token a warp, so their loads have no ranking to
// overlap, and convert where they load.
__device__ __forceinline__ float load_half_bits(const char *row, int e) {
    return __uint_as_float(load_streamed(reinterpret_cast<const unsigned short *>(row) + e));
}

__device__ __forceinline__ float widen_half(const RouteArgs &a, float bits) {
    return half_to_float(static_cast<unsigned short>(__float_as_uint(bits)), a.logits_type);
}

// The bits of -inf in a 16-bit type.
__device__ __forceinline__ float half_negative_infinity_bits(int32_t logits_type) {
    return __uint_as_float(logits_type == kLogitsBf16 ? 0xff80u : 0xfc00u);
}

// load_row_slice's 16-bit slots, as bits, loaded the way fp32 rows are:
// one address at constant offsets, and slots past the candidates load
// nothing and hold the bits of -inf, where an address per slot
// (min(i * 32 + lane, n - 1)) costs every slot of a row more instructions
// (e512-m16384-k10-bm8-bf16, e512-m4096-k10-bm64-bf16,
// e256-m8192-k8-bm64-bf16, e256-m4096-k8-bm64-deepseek-v3-bf16).
template <int S>
__device__ __forceinline__ RowSlice<S> load_half_row_bits(const RouteArgs &a, const char *row, int n_candidates,
                                                          int lane) {
    const unsigned short *r = reinterpret_cast<const unsigned short *>(row) + lane;
    const float negative_infinity_bits = half_negative_infinity_bits(a.logits_type);
    RowSlice<S> s;
#pragma unroll
    for (int i = 0; i < S; ++i)
        s.value[i] = slot_in_row<S>(i, lane, n_candidates) ? __uint_as_float(load_streamed(r + i * 32))
                                                           : negative_infinity_bits;
    return s;
}

// The row's slots widened to fp32. One branch on the type for the row:
// a conversion of either type per slot, each predicated on the type, cost
// a row two issued instructions a slot.
template <int S>
__device__ __forceinline__ void widen_half_row(const RouteArgs &a, RowSlice<S> &s) {
    const auto bits = [&](int i) { return static_cast<uint16_t>(__float_as_uint(s.value[i])); };
    if (a.logits_type == kLogitsBf16) {
#pragma unroll
        for (int i = 0; i < S; ++i) s.value[i] = alphamoe_bf16_to_float(bits(i));
    } else {
#pragma unroll
        for (int i = 0; i < S; ++i) s.value[i] = f16_bits_to_float(bits(i));
    }
}

// Ranking keys: the logits, or with a correction bias fl(score(L) + b).
template <int S>
__device__ __forceinline__ void flavour_keys(const RouteArgs &a, const RowSlice<S> &row, int n_candidates,
                                             int lane, uint32_t (&key)[S]) {
    if (!(a.flags & kFlagCorrectionBias)) {
        row_keys(row, n_candidates, lane, key);
        return;
    }
    float bias[S];
#pragma unroll
    for (int i = 0; i < S; ++i)
        bias[i] = slot_in_row<S>(i, lane, n_candidates) ? __ldg(a.correction_bias + lane + i * 32) : 0.0f;
    if constexpr (kSqrtSoftplusScores) {
        // The first half of the slots is always in the row; past it, groups
        // of 4 slots only where the row reaches them (DeepSeek-V4-Pro's 384
        // experts fill 12 of 16: e384-m4096-k6-bm64-deepseek-v4-pro).
        constexpr int kGroup = S < 4 ? S : 4;
#pragma unroll
        for (int g = 0; g < S; g += kGroup) {
#pragma unroll
            for (int i = g; i < g + kGroup; ++i) key[i] = kNoCandidateKey;
            if (g < S / 2 || g * 32 < n_candidates) {
#pragma unroll
                for (int i = g; i < g + kGroup; ++i)
                    if (slot_in_row<S>(i, lane, n_candidates))
                        key[i] = ordered_key(alphamoe_biased_score(alphamoe_sqrt_softplus(row.value[i]), bias[i]));
            }
        }
        return;
    }
    // Every slot's exponential first, then every division: the slots'
    // chains overlap (score_math.h). Up to 8 slots the divisions take
    // sigmoid_slots.cuh's fast path together. Rows of 16 slots (more than
    // 256 experts) take the exponentials of slots 8 to 11 and 12 to 15
    // only where the row reaches them (Kimi-K2's 384 experts fill 12), and
    // keep a division a slot, taken inside the key's condition so that
    // only the slots in the row divide (e384-m4096-k8-bm64-kimi-k2). The
    // fast path over the slots the row reaches pays only with warm code
    // (e384-m4096-k8-bm64-kimi-k2 with cold code), and its code slows the
    // calls that run none of it (e512-m4096-k10-bm64-ep-map64).
    float e[S], score[S];
#pragma unroll
    for (int i = 0; i < (S <= 8 ? S : 8); ++i) e[i] = alphamoe_sigmoid_exp(row.value[i]);
    if constexpr (S == 16) {
#pragma unroll
        for (int i = 8; i < S; ++i) e[i] = 1.0f;  // no key reads a slot past the row: only defined
        if (n_candidates > 8 * 32) {
#pragma unroll
            for (int i = 8; i < 12; ++i) e[i] = alphamoe_sigmoid_exp(row.value[i]);
        }
        if (n_candidates > 12 * 32) {
#pragma unroll
            for (int i = 12; i < 16; ++i) e[i] = alphamoe_sigmoid_exp(row.value[i]);
        }
    }
    if constexpr (S <= 8) sigmoid_finish_slots(row.value, e, score);
#pragma unroll
    for (int i = 0; i < S; ++i)
        key[i] = slot_in_row<S>(i, lane, n_candidates)
                     ? ordered_key(alphamoe_biased_score(
                           S <= 8 ? score[i] : alphamoe_sigmoid_finish(row.value[i], e[i]), bias[i]))
                     : kNoCandidateKey;
}

// The score key of a group, every lane giving its best and second best
// key of the group's experts it holds (kNoCandidateKey for none).
__device__ __forceinline__ uint32_t group_score(uint32_t best, uint32_t second, bool pair_sum, int lane) {
    const uint32_t top = __reduce_max_sync(kFullMask, best);
    if (!pair_sum) return top;
    // The runner-up: the holder of the top contributes its second.
    const uint32_t holders = __ballot_sync(kFullMask, best == top);
    const uint32_t offered = lane == __ffs(holders) - 1 ? second : best;
    const uint32_t runner_up = __reduce_max_sync(kFullMask, offered);
    return ordered_key(alphamoe_group_pair_score(key_value(top), key_value(runner_up)));
}

// The larger two of the keys {best_a, second_a, best_b, second_b}, equal
// keys counted apart (best >= second in each pair).
__device__ __forceinline__ void merge_best_two(uint32_t &best, uint32_t &second, uint32_t other_best,
                                               uint32_t other_second) {
    second = max(min(best, other_best), max(second, other_second));
    best = max(best, other_best);
}

// Groups of 32 experts, lane l holding key[g] of expert 32 g + l: the score
// key of group g in lane g < S, as group_score gives it (kNoCandidateKey
// in the lanes from S on). The S groups' best two keys are
// reduced together: each of the first log2(S) butterfly steps hands the
// partner lane half of the groups a lane still holds and merges the half
// it keeps, so that after them lane l holds group l >> (5 - log2 S), over
// 32 / S lanes; the remaining steps reduce within a group. That is one
// chain of 5 shuffle rounds, where a reduction a group (two REDUXes and a
// vote each) is a chain per group, the groups one after the other: each
// warp-wide instruction, in a region the compiler guards for divergence,
// ends a block it moves no code across (e256-m128-k8-bm64-deepseek-v3,
// e256-m4096-k8-bm64-deepseek-v3 and its -bf16 twin).
template <int S>
__device__ __forceinline__ uint32_t groups_of_32_score(const uint32_t (&key)[S], bool pair_sum, int lane) {
    static_assert(S >= 1 && S <= 32 && (S & (S - 1)) == 0, "a power of two of slots");
    constexpr int kSteps = S == 1 ? 0 : S == 2 ? 1 : S == 4 ? 2 : S == 8 ? 3 : S == 16 ? 4 : 5;
    uint32_t best[S], second[S];
#pragma unroll
    for (int g = 0; g < S; ++g) {
        best[g] = key[g];
        second[g] = kNoCandidateKey;
    }
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
        const int half = S >> (step + 1);  // groups held after this step
        const int mask = 16 >> step;
        const bool upper = (lane & mask) != 0;  // keeps the upper half
#pragma unroll
        for (int j = 0; j < half; ++j) {
            const uint32_t keep_best = upper ? best[j + half] : best[j];
            const uint32_t keep_second = upper ? second[j + half] : second[j];
            const uint32_t other_best = __shfl_xor_sync(kFullMask, upper ? best[j] : best[j + half], mask);
            const uint32_t other_second = __shfl_xor_sync(kFullMask, upper ? second[j] : second[j + half], mask);
            best[j] = keep_best;
            second[j] = keep_second;
            merge_best_two(best[j], second[j], other_best, other_second);
        }
    }
#pragma unroll
    for (int mask = 16 >> kSteps; mask > 0; mask >>= 1) {
        const uint32_t other_best = __shfl_xor_sync(kFullMask, best[0], mask);
        const uint32_t other_second = __shfl_xor_sync(kFullMask, second[0], mask);
        merge_best_two(best[0], second[0], other_best, other_second);
    }
    const uint32_t score =
        pair_sum ? ordered_key(alphamoe_group_pair_score(key_value(best[0]), key_value(second[0]))) : best[0];
    // Group g's lanes are g << (5 - kSteps) onward.
    const uint32_t mine = __shfl_sync(kFullMask, score, (lane << (5 - kSteps)) & 31);
    return lane < S ? mine : kNoCandidateKey;
}

// The groups kept: bit g for each of the best `kept` of `groups` score
// keys, lane g < groups holding group g's; equal scores rank the lower
// group first. Only the groups there are (8 for DeepSeek-V3, not the 32
// a lane could hold): the loop is in the per-token instructions of large
// calls. kUpTo8Groups (groups <= 8: DeepSeek-V3's, GLM-4.5's): 8
// comparisons with no loop, for the per-token code of the warps' rankings;
// a lane from `groups` on holds kNoCandidateKey, below every group's score
// key, and sits after every group, so it puts no group behind it. (The
// CTA's one-token ranking keeps the loop, which is faster there:
// e256-m1-k8-bm64-deepseek-v3, e256-m8-k8-bm64-deepseek-v3.)
template <bool kUpTo8Groups = false>
__device__ __forceinline__ uint32_t best_groups(uint32_t my_group, int groups, int kept, int lane) {
    int ahead = 0;
#pragma unroll(kUpTo8Groups ? 8 : 4)
    for (int j = 0; j < (kUpTo8Groups ? 8 : groups); ++j) {
        const uint32_t other = __shfl_sync(kFullMask, my_group, j);
        ahead += (other > my_group || (other == my_group && j < lane)) ? 1 : 0;
    }
    return __ballot_sync(kFullMask, lane < groups && ahead < kept);
}

// Grouped selection: only experts of the token's best topk_groups groups
// stay candidates. A group's score is its best key, or with a correction
// bias fl(best + second best); equal scores rank the lower group first and
// NaN ranks last, as keys do. Every expert is a candidate here (no shared
// expert with groups).
template <int S>
__device__ __forceinline__ void keep_best_groups(const RouteArgs &a, int lane, uint32_t (&key)[S]) {
    const int groups = a.num_groups;
    // Groups divide the experts (validated), so the group size is compared
    // without a division: the integer division, about 35 instructions a
    // token, is done only where the groups are not of 32.
    const bool pair_sum = (a.flags & kFlagCorrectionBias) && a.num_experts > groups;
    int group_of[S];                      // -1 past the experts
    uint32_t my_group = kNoCandidateKey;  // lane g < groups: the score key of group g
    // Groups of 32 (DeepSeek-V3's 8 of 256): slot g is group g, one key
    // per lane, so no group needs a pass over every slot, and the groups
    // are reduced together (groups_of_32_score). Only up to 8 slots: in
    // the 16-slot entries (E > 256, more than 8 such groups) the code would
    // be long, and skipping it costs the other flavours of those entries a
    // fetch of cold code (e384-m1-k8-bm64-kimi-k2 with cold code).
    if (S <= 8 && a.num_experts == groups * 32) {
#pragma unroll
        for (int g = 0; g < S; ++g) group_of[g] = g < groups ? g : -1;
        my_group = groups_of_32_score(key, pair_sum, lane);
    } else {
        const int size = a.num_experts / groups;
#pragma unroll
        for (int i = 0; i < S; ++i) group_of[i] = i * 32 + lane < a.num_experts ? (i * 32 + lane) / size : -1;
        for (int g = 0; g < groups; ++g) {
            uint32_t best = kNoCandidateKey, second = kNoCandidateKey;
#pragma unroll
            for (int i = 0; i < S; ++i) {
                if (group_of[i] == g) {
                    if (key[i] > best) {
                        second = best;
                        best = key[i];
                    } else if (key[i] > second) {
                        second = key[i];
                    }
                }
            }
            const uint32_t score = group_score(best, second, pair_sum, lane);
            if (lane == g) my_group = score;
        }
    }
    // (Rows of 16 slots keep the loop: unrolled there, the shared-expert
    // tiny entry point of 16 slots spilled on sm_100a and sm_103a.)
    const uint32_t kept = S <= 8 && groups <= 8 ? best_groups<true>(my_group, groups, a.topk_groups, lane)
                                                : best_groups(my_group, groups, a.topk_groups, lane);
#pragma unroll
    for (int i = 0; i < S; ++i)
        if (group_of[i] >= 0 && !((kept >> group_of[i]) & 1u)) key[i] = kNoCandidateKey;
}

// Full-row softmax probability of each active lane's logit (no
// renormalization): the largest and the sum run over every logit of the
// row, the shared column included, with the contract's non-finite rules.
template <int S>
__device__ __forceinline__ float full_row_softmax(const RowSlice<S> &row, int n_candidates, int lane,
                                                  bool has_shared, float shared_logit, float logit,
                                                  bool active) {
    const bool own_shared = has_shared && lane == 0;  // one lane counts the shared column
    float m = own_shared && !isnan(shared_logit) ? shared_logit : -INFINITY;
#pragma unroll
    for (int i = 0; i < S; ++i)
        if (slot_in_row<S>(i, lane, n_candidates) && !isnan(row.value[i])) m = fmaxf(m, row.value[i]);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) m = fmaxf(m, __shfl_xor_sync(kFullMask, m, offset));
    if (m == INFINITY) {
        uint32_t n_inf = own_shared && shared_logit == INFINITY ? 1u : 0u;
#pragma unroll
        for (int i = 0; i < S; ++i) n_inf += (slot_in_row<S>(i, lane, n_candidates) && row.value[i] == INFINITY) ? 1u : 0u;
        n_inf = __reduce_add_sync(kFullMask, n_inf);
        return active && logit == INFINITY ? 1.0f / static_cast<float>(n_inf) : 0.0f;
    }
    if (!(m > -INFINITY)) return 0.0f;  // only -inf and NaN in the row
    float sum = own_shared && !isnan(shared_logit) ? expf(shared_logit - m) : 0.0f;
#pragma unroll
    for (int i = 0; i < S; ++i)
        if (slot_in_row<S>(i, lane, n_candidates) && !isnan(row.value[i])) sum += expf(row.value[i] - m);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(kFullMask, sum, offset);
    return active && !isnan(logit) ? expf(logit - m) / sum : 0.0f;
}

// Sigmoid scoring: the score of each active lane's logit (NaN counts 0),
// divided by the chosen scores' sum unless not renormalizing (a zero sum
// gives 0). Chosen lanes are 0..k-1, k <= 16.
__device__ __forceinline__ float sigmoid_weight(float logit, bool active, bool renormalize,
                                                float *sum_terms = nullptr) {
    float s = active ? alphamoe_sigmoid(logit) : 0.0f;
    if (isnan(s)) s = 0.0f;
    if (!renormalize) return s;
    const float sum = sum_of_16_lanes(s, sum_terms);
    return sum > 0.0f ? s / sum : 0.0f;
}

// The per-expert score of the kernel's scoring: sqrt-softplus in its own
// kernels, else the sigmoid.
__device__ __forceinline__ float expert_score(float x) {
    return kSqrtSoftplusScores ? alphamoe_sqrt_softplus(x) : alphamoe_sigmoid(x);
}

// warp_rank_keys over flavour_keys' sqrt-softplus keys with a correction
// bias and no groups, from bounds on each key: fl(lo + b) <= fl(s + b) <=
// fl(hi + b) (score_bounds.cuh; rounding keeps the order). The
// n_select-th largest of the lanes' largest lower bounds bounds the chosen
// keys from below, as in warp_rank_keys; only the experts whose upper
// bound reaches it can be chosen, and only those, gathered one a lane,
// take their exact key: a few instructions a slot rather than a
// sqrt-softplus each (e384-m4096-k6-bm64-deepseek-v4-pro). The sigmoid's
// keys cost too little for bounds to pay (e384-m4096-k8-bm64-kimi-k2).
// Returns false, having written no output, where the bound is at or below
// -inf's key (lower bounds of NaN count as -inf there) or more than 32
// experts reach it: the caller then ranks the exact keys.
template <int S>
__device__ __forceinline__ bool warp_rank_biased_by_bounds(const RouteArgs &a, const RowSlice<S> &row,
                                                           int n_candidates, int n_select, int lane,
                                                           RankScratch &scratch, int32_t &id_out,
                                                           uint32_t &key_out, uint32_t &first_key) {
    float high[S];
    float lane_low = -INFINITY;
    // Groups of 4 slots past the first half only where the row reaches
    // them, as flavour_keys takes them.
    constexpr int kGroup = S < 4 ? S : 4;
#pragma unroll
    for (int g = 0; g < S; g += kGroup) {
#pragma unroll
        for (int i = g; i < g + kGroup; ++i) high[i] = -INFINITY;  // reaches no bound above -inf's key
        if (g < S / 2 || g * 32 < n_candidates) {
#pragma unroll
            for (int i = g; i < g + kGroup; ++i) {
                if (slot_in_row<S>(i, lane, n_candidates)) {
                    const float b = __ldg(a.correction_bias + lane + i * 32);
                    float lo, hi;
                    sqrt_softplus_bounds(row.value[i], lo, hi);
                    lane_low = fmaxf(lane_low, alphamoe_biased_score(lo, b));
                    high[i] = alphamoe_biased_score(hi, b);
                }
            }
        }
    }
    const uint32_t bound = scratch_nth_largest_bound(scratch, ordered_key(lane_low), n_select, lane);
    if (bound <= ordered_key(-INFINITY)) return false;
    // key >= bound <=> value >= threshold for every value but NaN, which
    // reaches no bound above -inf's.
    const float threshold = key_value(bound);
    uint32_t count = 0;
#pragma unroll
    for (int i = 0; i < S; ++i) count -= reaches_mask(high[i], threshold);
    int32_t at, gathered;
    warp_exclusive_sum_of_counts(count, lane, &at, &gathered, 5);
    if (gathered > 32) return false;
    uint32_t *next = &scratch.gathered.value[at];  // the ids 32 words after
#pragma unroll
    for (int i = 0; i < S; ++i) {
        if (high[i] >= threshold) {
            next[0] = __float_as_uint(row.value[i]);
            next[32] = static_cast<uint32_t>(i * 32 + lane);
            ++next;
        }
    }
    __syncwarp();
    const float x = __uint_as_float(scratch.gathered.value[lane]);
    const int32_t id = static_cast<int32_t>(scratch.gathered.id[lane]);
    const bool mine = lane < gathered;
    const uint32_t key =
        mine ? ordered_key(alphamoe_biased_score(expert_score(x), __ldg(a.correction_bias + id))) : 0u;
    __syncwarp();  // the list is read before the ranking's values overwrite it
    const uint64_t value = mine ? rank_value(key, id) : 0u;  // 0, rank_gathered_wide's padding
    scratch.chosen[lane] = value;
    __syncwarp();
    rank_gathered_wide<8>(scratch, value, gathered, n_select, lane, id_out, key_out, first_key);
    return true;
}

// sigmoid_weight from the active lanes' scores, already taken (a CTA's
// ranking keeps them: one_token_select_flavoured.cuh), with the routed
// scaling factor. Sqrt-softplus scores, the one unbounded score: n infinite
// scores (of +inf logits) weigh 1/n each and every other 0, and a weight
// past the largest float is the largest float.
__device__ __forceinline__ float expert_score_weight(uint32_t flags, float scale, float score, bool active,
                                                     float *sum_terms) {
    float s = active ? score : 0.0f;
    if (isnan(s)) s = 0.0f;
    if (!(flags & kFlagNoRenormalize)) {
        const float sum = sum_of_16_lanes(s, sum_terms);
        if constexpr (kSqrtSoftplusScores) {
            const int n_inf = __popc(__ballot_sync(kFullMask, s == INFINITY));
            s = n_inf > 0 ? (s == INFINITY ? 1.0f / static_cast<float>(n_inf) : 0.0f) : sum > 0.0f ? s / sum : 0.0f;
        } else {
            s = sum > 0.0f ? s / sum : 0.0f;
        }
    }
    const float w = scale == 1.0f ? s : s * scale;
    return kSqrtSoftplusScores ? fminf(w, FLT_MAX) : w;
}

// The plan's id of global expert `id`: itself without expert parallelism,
// else its local id, or -1 when another rank owns it (any map value
// outside [0, L) means that).
__device__ __forceinline__ int32_t local_expert(const RouteArgs &a, int32_t id) {
    const int32_t local = (a.flags & kFlagExpertMap) ? __ldg(a.expert_map + id) : id - a.local_begin;
    return static_cast<uint32_t>(local) < static_cast<uint32_t>(a.plan_experts) ? local : -1;
}

}  // namespace alphamoe

#endif
