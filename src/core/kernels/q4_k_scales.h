// Unpacking a Q4_K block's 12 scale bytes (layout in formats/q4_k.h) with
// four 32-bit word operations instead of 16 bit-field extractions: bytes
// 0-3 of the result are sc[0..3], 4-7 sc[4..7], 8-11 m[0..3], 12-15 m[4..7].
// Byte-wise, (w >> 2) & 0x30 moves each byte's top two bits to bits 4-5,
// which is where the 6-bit values of sub-blocks 4..7 keep them.
//
// `static`: each including kernel file (any ISA) gets a private copy.
#pragma once

#include <cstdint>
#include <cstring>

namespace kvforge {

static inline void q4_k_unpack_scale_bytes(const uint8_t* scales, uint32_t out[4]) {
  uint32_t w[3];
  std::memcpy(w, scales, 12);
  out[0] = w[0] & 0x3f3f3f3fu;                                         // sc[0..3]
  out[1] = (w[2] & 0x0f0f0f0fu) | ((w[0] >> 2) & 0x30303030u);         // sc[4..7]
  out[2] = w[1] & 0x3f3f3f3fu;                                         // m[0..3]
  out[3] = ((w[2] >> 4) & 0x0f0f0f0fu) | ((w[1] >> 2) & 0x30303030u);  // m[4..7]
}

}  // namespace kvforge
