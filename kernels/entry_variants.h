// The entry point variants of kernels/variants.def as policy types: what a
// variant's entry points compile differently from the kernel's plain ones.
// The host's plan says which calls each serves (capi/plan.cpp).
#ifndef ALPHAMOE_KERNELS_ENTRY_VARIANTS_H
#define ALPHAMOE_KERNELS_ENTRY_VARIANTS_H

namespace alphamoe {
namespace variant {

// The kernel's code for every call it takes.
struct plain {
    // Rows of 16-bit logits (bf16 or fp16), converted where a row is ranked
    // (kernels/common/flavour.cuh); otherwise the plain kernels read fp32
    // and the flavoured kernels either type.
    static constexpr bool kHalfLogits = false;
    // A large-kernel CTA lists its pairs in plan order while the counts
    // travel (stage_ranked_pairs, route_cta.cuh).
    static constexpr bool kStagedPairs = false;
    // A CTA of one token ranks it with all its warps (the flavoured
    // one-token ranking, one_token_select_flavoured.cuh; the wide one,
    // kernels/wide.cu).
    static constexpr bool kCtaRanksToken = false;
    // The wide kernels' warps hash their tokens rather than rank them
    // (kernels/wide.cu): each entry point holds one of the two's code.
    static constexpr bool kHashRouting = false;
};

struct half_logits : plain {
    static constexpr bool kHalfLogits = true;
};

struct staged : plain {
    static constexpr bool kStagedPairs = true;
};

struct staged_half_logits : plain {
    static constexpr bool kHalfLogits = true;
    static constexpr bool kStagedPairs = true;
};

// The flavoured and wide tiny kernels' one-token calls.
struct one_token : plain {
    static constexpr bool kCtaRanksToken = true;
};

// The flavoured small kernel's grids of a token a CTA.
struct token_ctas : plain {
    static constexpr bool kCtaRanksToken = true;
};

// The wide kernels' hash-routing calls.
struct hashed : plain {
    static constexpr bool kHashRouting = true;
};

}  // namespace variant
}  // namespace alphamoe

#endif
