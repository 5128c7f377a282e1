// Maps a float to an unsigned key whose integer order is the contract's
// ranking order (section 3): larger key ranks first, -0.0 equals +0.0, and
// every NaN ranks after -inf. Key 0 is reserved for "no candidate".
#ifndef ALPHAMOE_KERNELS_ORDERED_KEY_CUH
#define ALPHAMOE_KERNELS_ORDERED_KEY_CUH

#include <stdint.h>

namespace alphamoe {

constexpr uint32_t kNoCandidateKey = 0u;
constexpr uint32_t kNanKey = 1u;  // below -inf (0x007fffff), above "no candidate"

__device__ __forceinline__ uint32_t ordered_key(float x) {
    uint32_t u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return kNanKey;
    if (u == 0x80000000u) u = 0u;  // -0.0 ranks as +0.0
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// The logit a key came from (NaN payloads and the sign of zero are not kept;
// neither changes a weight).
__device__ __forceinline__ float key_value(uint32_t key) {
    if (key == kNanKey) return __uint_as_float(0x7fc00000u);
    return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

}  // namespace alphamoe

#endif
