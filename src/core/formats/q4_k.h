// Q4_K (GGUF type 12): 4-bit asymmetric quantization in super-blocks of 256
// elements = 8 sub-blocks of 32, each with its own 6-bit scale and 6-bit min.
//
// Block layout (144 bytes, no padding):
//   offset 0    uint16 d          super-scale for the sub-block scales, IEEE half
//   offset 2    uint16 dmin       super-scale for the sub-block mins, IEEE half
//   offset 4    uint8  scales[12] 8 scales sc[j] and 8 mins m[j], 6 bits each:
//                 j < 4:  sc[j] = scales[j]   & 63     m[j] = scales[j+4] & 63
//                 j >= 4: sc[j] = (scales[j+4] & 15) | (scales[j-4] >> 6) << 4
//                         m[j]  = (scales[j+4] >> 4) | (scales[j]   >> 6) << 4
//               i.e. bytes 0-3 hold sc[0..3] in their low 6 bits and the top
//               2 bits of sc[4..7] above; bytes 4-7 the same for m[0..3] and
//               m[4..7]; bytes 8-11 the low 4 bits of sc[4..7] (low nibble)
//               and of m[4..7] (high nibble). 16 six-bit numbers in 12 bytes.
//   offset 16   uint8  qs[128]    nibbles, in 4 groups of 32 bytes; group g
//               covers elements 64g..64g+63: element 64g + l is the LOW nibble
//               of qs[32g + l] (sub-block 2g), element 64g + 32 + l the HIGH
//               nibble (sub-block 2g+1), for l < 32.
//
// Dequantization of element l of sub-block j, q = its nibble in [0, 15]:
//   x = (d * sc[j]) * q - (dmin * m[j])
// evaluated exactly in this order in f32 (two products per sub-block, then one
// multiply and one subtract per element, no fused multiply-add).
//
// Why: the min lets a sub-block use all 16 levels for an asymmetric range;
// quantizing the 16 per-sub-block parameters to 6 bits under two half
// super-scales costs 12 + 4 bytes per 256 weights (4.5 bits per weight total).
//
// Quantization (quantize_row_q4_k) is our own search in the style of the
// published make_qkx2 quantizer, shared with Q5_K (kquant_min_search.h): per
// sub-block, candidate step sizes around (max - min)/15 are tried, each
// assignment refitted by weighted least squares for (scale, min) (weights
// |x| + rms, favouring large values), the best kept; the 8 scales and mins
// are then quantized to 6 bits and the nibbles recomputed against the stored
// values. Quality, not bit-identity with other quantizers, is the goal;
// dequantization is bit-exact to the definition.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ4_K {
  static constexpr int kElems = 256;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kElems / 2];
};
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block must be 144 bytes as in GGUF");

// Unpacks sub-block j's (0..7) 6-bit scale and min from the 12-byte array.
inline void q4_k_scale_min(const uint8_t* scales, int j, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = scales[j] & 63;
    m = scales[j + 4] & 63;
  } else {
    sc = uint8_t((scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4));
    m = uint8_t((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Sub-block j's step d * sc and min dmin * m, each rounded to f32 as the
// format decodes x = step * q - min (shared with Q5_K).
inline void q4_k_step_min(const uint8_t* scales, int j, float d, float dmin, float& step,
                          float& min) {
  uint8_t sc = 0, m = 0;
  q4_k_scale_min(scales, j, sc, m);
  step = d * float(sc);
  min = dmin * float(m);
}

// n: elements, a multiple of 256.
void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t n);
void quantize_row_q4_k(const float* src, BlockQ4_K* dst, int64_t n);

}  // namespace kvforge
