// Unpacking a Q3_K block's 12 scale bytes (layout in formats/q3_k.h) with
// word operations instead of 16 bit-field extractions: out[j] is the stored
// 6-bit scale sc[j] of sub-block j (the scale is sc[j] - 32). With the bytes
// read as three little-endian words w0 (bytes 0-3), w1 (4-7), w2 (8-11),
// byte-wise: the low nibbles of w0 / w1 are sc[0..3] / sc[4..7], their high
// nibbles sc[8..11] / sc[12..15], and bit pairs (0,1), (2,3), (4,5), (6,7) of
// w2 the top two bits of sc[0..3], sc[4..7], sc[8..11], sc[12..15].
//
// `static`: each including kernel file (any ISA) gets a private copy.
#pragma once

#include <cstdint>
#include <cstring>

namespace kvforge {

static inline void q3_k_unpack_scale_words(const uint8_t* scales, uint32_t out[4]) {
  uint32_t w[3];
  std::memcpy(w, scales, 12);
  out[0] = (w[0] & 0x0f0f0f0fu) | ((w[2] << 4) & 0x30303030u);         // sc[0..3]
  out[1] = (w[1] & 0x0f0f0f0fu) | ((w[2] << 2) & 0x30303030u);         // sc[4..7]
  out[2] = ((w[0] >> 4) & 0x0f0f0f0fu) | (w[2] & 0x30303030u);         // sc[8..11]
  out[3] = ((w[1] >> 4) & 0x0f0f0f0fu) | ((w[2] >> 2) & 0x30303030u);  // sc[12..15]
}

static inline void q3_k_unpack_scales(const uint8_t* scales, uint8_t out[16]) {
  uint32_t words[4];
  q3_k_unpack_scale_words(scales, words);
  std::memcpy(out, words, 16);
}

}  // namespace kvforge
