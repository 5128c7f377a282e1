// The plan of a call of at most one token per warp (M <= 16) in one CTA
// whose every expert is a plan expert (no expert map, no local range). A
// token's k ids are distinct and all plan experts, so an expert has at
// most one pair per token. The general plan's code for any grid, any
// tokens per warp and any padding run, run once per call and fetched
// cold, costs such a call most of its time after selection; these take
// shorter paths.
#ifndef ALPHAMOE_KERNELS_FEW_TOKEN_PLAN_CUH
#define ALPHAMOE_KERNELS_FEW_TOKEN_PLAN_CUH

#include "common/route_cta.cuh"

namespace alphamoe {

// One token: each chosen expert's group is its one pair padded to one
// block, in id order, so a group starts at block_m times the number of
// chosen ids below it. All of the plan but the k block starts is known
// before the token is ranked: the warps other than warp 0 write it while
// warp 0 waits for the row, and warp 0 then writes the block starts alone,
// with no barrier (the addresses differ).

// The padding of a one-token plan, the live length and the tail, by
// `threads` threads of the CTA (thread < threads), before the ranking.
__device__ __forceinline__ void write_one_token_padding(const RouteArgs &a, uint32_t thread, uint32_t threads) {
    const int k = a.top_k;
    const int32_t bm = a.block_m;
    const int32_t live_length = k * bm;
    const int32_t sentinel = k;  // M * k
#pragma unroll 1
    for (uint32_t pos = thread; pos < static_cast<uint32_t>(live_length); pos += threads)
        if (block_m_divide(a, pos) * bm != static_cast<int32_t>(pos)) a.sorted_token_ids[pos] = sentinel;
    if (thread == 0) {
        *a.num_tokens_post_padded = live_length;
        if (a.expert_offsets) a.expert_offsets[a.plan_experts] = live_length;
    }
    if (a.flags & kFlagTailFill) fill_tail(a, live_length, k, thread, threads);
}

// Pair `pair` of the token, of expert `id`, at the start of block `block`
// (the rank of id among the token's k ids).
__device__ __forceinline__ void write_one_token_block(const RouteArgs &a, int32_t block, int32_t id, int32_t pair) {
    const int32_t pos = block * a.block_m;
    a.expert_ids[block] = id;
    a.sorted_token_ids[pos] = pair;
    if (a.pair_to_sorted) a.pair_to_sorted[pair] = pos;
}

// Warp 0, once it has ranked token 0: lane j < k puts pair j at the start
// of its expert's block, the rank of its id among the k found by comparing
// it with the others'. (The CTA's ranking, whose candidates lie in id
// order, finds those ranks without this: one_token_select.cuh.)
__device__ __forceinline__ void write_one_token_blocks(const RouteArgs &a, const CtaShared &sh) {
    const int lane = threadIdx.x & 31;
    const int k = a.top_k;
    const int32_t id = lane < k ? sh.pair_ids[0][lane] : 0;
    int32_t below = 0;
#pragma unroll
    for (int l = 0; l < kMaxTopK; ++l) {
        const int32_t other = __shfl_sync(kFullMask, id, l);
        below += l < k && other < id ? 1 : 0;
    }
    if (lane < k) write_one_token_block(a, below, id, lane);
}

// expert_counts and expert_offsets of a one-token plan, when asked for:
// one entry per expert, so every thread reads the k ids. Every thread of
// the CTA calls it once warp 0 has ranked the token.
__device__ __forceinline__ void write_one_token_expert_table(const RouteArgs &a, const CtaShared &sh) {
    __syncthreads();
    const int e = threadIdx.x;
    if (e >= a.plan_experts) return;
    int32_t below = 0;
    bool chosen = false;
#pragma unroll 1
    for (int l = 0; l < a.top_k; ++l) {
        const int32_t id = sh.pair_ids[0][l];
        below += id < e ? 1 : 0;
        chosen = chosen || id == e;
    }
    if (a.expert_counts) a.expert_counts[e] = chosen ? 1 : 0;
    if (a.expert_offsets) a.expert_offsets[e] = below * a.block_m;
}

// 2 to 16 tokens, warp w holding token w. An expert's pairs, at most one
// per token, take positions in token order: each expert's tokens are one
// word of bits (built with shared-memory atomics once the tokens are
// ranked), so its count and each pair's place in its group are population
// counts, with no pass over every token warp's counts. The groups start
// where a scan of the block counts puts them. The padding is written over
// the whole live length first, by every thread and coalesced, and the
// pairs over it.

// Every thread of the CTA, once the warps have written their tokens'
// pair_ids (warps below `tokens` hold one each, token w warp w's): sets
// each pair's bit. Returns, in lane j < k of such a warp, pair j's expert,
// and -1 elsewhere.
__device__ __forceinline__ int32_t mark_token_bits(const RouteArgs &a, CtaShared &sh, int32_t tokens) {
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    __syncthreads();  // every token ranked, every word clear
    const int32_t local = warp < tokens && lane < a.top_k ? sh.pair_ids[warp][lane] : -1;
    if (local >= 0) atomicOr(&sh.token_mask[local], 1u << warp);
    __syncthreads();
    return local;
}

// Every thread of the CTA calls it once the warps have ranked their tokens
// (e8-m16-k2-bm64). (Marking each token as soon as its warp has ranked it,
// with the masks cleared behind a barrier before the ranking, does not pay
// here, where the plan's barriers follow anyway; it pays in the token
// warps' plan below, which drops them.)
__device__ __forceinline__ void write_few_token_plan_by_cta(const RouteArgs &a, CtaShared &sh) {
    const int e = threadIdx.x;
    const int warp = e >> 5;
    const int lane = e & 31;
    const int M = a.num_tokens;
    const int k = a.top_k;
    const int E = a.plan_experts;
    const int32_t bm = a.block_m;
    const int32_t pair_expert = mark_token_bits(a, sh, M);
    const bool pair_thread = pair_expert >= 0;
    const uint32_t tokens = e < E ? sh.token_mask[e] : 0u;
    const int32_t count = __popc(tokens);
    // At most ceil(M / block_m) <= 16 blocks: a scan of values below 32,
    // with a ballot per bit of that bound (one where block_m >= M).
    const int32_t blocks = count > 0 ? block_m_divide(a, count - 1) + 1 : 0;
    int32_t live_blocks = 0;
    const int32_t first_block =
        block_exclusive_scan_below_32(blocks, sh.scan_scratch, &live_blocks, most_blocks_bits(a, M));
    const int32_t offset = first_block * bm;
    const int32_t live_length = live_blocks * bm;
    if (e < E) {
        sh.offset[e] = offset;
        if (a.expert_counts) a.expert_counts[e] = count;
        if (a.expert_offsets) a.expert_offsets[e] = offset;
#pragma unroll 1
        for (int32_t b = first_block; b < first_block + blocks; ++b) a.expert_ids[b] = e;
    }
    if (e == 0) {
        *a.num_tokens_post_padded = live_length;
        if (a.expert_offsets) a.expert_offsets[E] = live_length;
    }
    const int32_t sentinel = M * k;
#pragma unroll 1
    for (int32_t pos = e; pos < live_length; pos += kBlockThreads) a.sorted_token_ids[pos] = sentinel;
    __syncthreads();  // the sentinels before the pairs that replace some
    if (pair_thread) {
        const uint32_t earlier_tokens = sh.token_mask[pair_expert] & ((1u << warp) - 1u);
        const int32_t pos = sh.offset[pair_expert] + __popc(earlier_tokens);
        const int32_t p = warp * k + lane;
        a.sorted_token_ids[pos] = p;
        if (a.pair_to_sorted) a.pair_to_sorted[p] = pos;
    }
    if (a.flags & kFlagTailFill) fill_tail(a, live_length, live_blocks, e, kBlockThreads);
}

// Where block_m >= M every chosen expert's group is one block, whose first
// position is block_m times the number of chosen experts below it. Each
// token warp marked its pairs in the token bits and in a bit per chosen
// expert as it ranked its token (kTallyChosenBits; the words were cleared
// behind a CTA barrier while the rows loaded). Once the token warps meet
// at a named barrier, each places its own pairs: a scan of the 16 words'
// population counts, then one shuffle of the word and one of its scan for
// each pair; the expert's first token writes its block id and its
// padding. No barrier of the whole CTA after the ranking, and no warp but
// the token warps, where the CTA's plan waits on a chain of barriers, a
// scan and stores (e512-m8-k10-bm8).

constexpr int kPlanBarrier = 1;  // a named barrier; 0 is __syncthreads'
constexpr int kChosenWords = kMaxExperts / 32;
// Every warp of the CTA, once it has ranked its token if it holds one
// (kTallyChosenBits).
__device__ __forceinline__ void write_few_token_plan_by_token_warps(const RouteArgs &a, CtaShared &sh) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int M = a.num_tokens;
    const int k = a.top_k;
    const int E = a.plan_experts;
    const int32_t bm = a.block_m;
    // The tail fill needs the whole CTA; otherwise the token warps alone.
    const bool tail_fill = (a.flags & kFlagTailFill) != 0;
    const int warps = tail_fill ? kWarpsPerBlock : M;
    if (warp >= warps) return;
    asm volatile("bar.sync %0, %1;" ::"n"(kPlanBarrier), "r"(warps * 32) : "memory");
    const bool pair_lane = warp < M && lane < k;
    const int32_t x = pair_lane ? sh.pair_ids[warp][lane] : 0;
    const uint32_t tokens = sh.token_mask[x];
    const uint32_t word = lane < kChosenWords ? sh.chosen_experts[lane] : 0u;
    const int32_t inclusive = warp_inclusive_sum<kChosenWords>(__popc(word), lane);
    const int32_t word_first_block = inclusive - __popc(word);
    const int32_t live_blocks = __shfl_sync(kFullMask, inclusive, kChosenWords - 1);
    const int32_t live_length = live_blocks * bm;
    const uint32_t x_word = __shfl_sync(kFullMask, word, x >> 5);
    const int32_t block =
        __shfl_sync(kFullMask, word_first_block, x >> 5) + __popc(x_word & ((1u << (x & 31)) - 1u));
    if (pair_lane) {
        const uint32_t earlier_tokens = tokens & ((1u << warp) - 1u);
        const int32_t start = block * bm;
        const int32_t pos = start + __popc(earlier_tokens);
        const int32_t p = warp * k + lane;
        a.sorted_token_ids[pos] = p;
        if (a.pair_to_sorted) a.pair_to_sorted[p] = pos;
        if (earlier_tokens == 0u) {  // the expert's first token: its block and padding
            a.expert_ids[block] = x;
            const int32_t sentinel = M * k;
#pragma unroll 1
            for (int32_t q = start + __popc(tokens); q < start + bm; ++q) a.sorted_token_ids[q] = sentinel;
        }
    }
    if (threadIdx.x == 0) {
        *a.num_tokens_post_padded = live_length;
        if (a.expert_offsets) a.expert_offsets[E] = live_length;
    }
    if (a.expert_counts || a.expert_offsets) {
        // Expert 32 w + lane is bit lane of chosen word w.
#pragma unroll 1
        for (int w = warp; w * 32 < E; w += warps) {
            const uint32_t bits = __shfl_sync(kFullMask, word, w);
            const int32_t first = __shfl_sync(kFullMask, word_first_block, w) + __popc(bits & ((1u << lane) - 1u));
            const int32_t e = w * 32 + lane;
            if (e < E) write_expert_table_entry(a, e, __popc(sh.token_mask[e]), first * bm);
        }
    }
    if (tail_fill) fill_tail(a, live_length, live_blocks, threadIdx.x, kBlockThreads);
}

// Every thread of the CTA, once the warps have ranked their tokens;
// token_warps: where the host planned it (kPlanTokenWarps: a call of 2 to
// 16 tokens at block_m <= kTokenWarpsPlanMaxBlockM, one block an expert),
// in the plain kernels, whose tokens were ranked with kTallyChosenBits.
__device__ __forceinline__ void write_few_token_plan(const RouteArgs &a, CtaShared &sh, bool token_warps) {
    if (token_warps)
        write_few_token_plan_by_token_warps(a, sh);
    else
        write_few_token_plan_by_cta(a, sh);
}

}  // namespace alphamoe

#endif
