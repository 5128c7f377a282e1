// Maps a float to an unsigned key whose integer order is the contract's
// ranking order (section 3): larger key ranks first, -0.0 equals +0.0, and
// every NaN ranks after -inf. Key 0 is reserved for "no candidate".
#ifndef ALPHAMOE_KERNELS_ORDERED_KEY_CUH
#define ALPHAMOE_KERNELS_ORDERED_KEY_CUH

#include <math.h>
#include <stdint.h>

namespace alphamoe {

constexpr uint32_t kNoCandidateKey = 0u;
constexpr uint32_t kNanKey = 1u;  // below -inf (0x007fffff), above "no candidate"

// Branch-free: a warp converts a whole row slot by slot, and a branch per
// element would cost a convergence barrier each.
__device__ __forceinline__ uint32_t ordered_key(float x) {
    // -0.0 + 0.0 is +0.0 (denormals are kept: kernels build without
    // flush-to-zero), so both zeros get one key.
    const uint32_t u = __float_as_uint(x + 0.0f);
    // Negative: every bit flips (a larger magnitude ranks lower); otherwise
    // only the sign bit, which puts positives above negatives.
    const uint32_t flip = static_cast<uint32_t>(static_cast<int32_t>(u) >> 31) | 0x80000000u;
    return isnan(x) ? kNanKey : u ^ flip;
}

// The logit a key came from (NaN payloads and the sign of zero are not kept;
// neither changes a weight).
__device__ __forceinline__ float key_value(uint32_t key) {
    const uint32_t flip = (key & 0x80000000u) ? 0x80000000u : 0xffffffffu;
    return key == kNanKey ? __uint_as_float(0x7fc00000u) : __uint_as_float(key ^ flip);
}

}  // namespace alphamoe

#endif
