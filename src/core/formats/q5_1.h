// Q5_1 (GGUF type 7): 5-bit asymmetric quantization in blocks of 32.
//
// Block layout (24 bytes, no padding):
//   offset 0   uint16 d      step, IEEE half (f16.h)
//   offset 2   uint16 m      offset, IEEE half: the value of level 0
//   offset 4   uint8  qh[4]  the 5th (top) bits, read as one little-endian
//                            uint32 h: bit j of h is bit 4 of element j, for
//                            every j < 32 (byte qh[j / 8], bit j % 8)
//   offset 8   uint8  qs[16] the low 4 bits, as Q4_0 / Q4_1 pack them:
//                            element i      (i < 16) = low nibble  of qs[i]
//                            element i + 16 (i < 16) = high nibble of qs[i]
//
//   byte:  0    1    2    3    4      5       6       7        8           ...  23
//          [ d      ][ m      ][h0-7 ][h8-15 ][h16-23][h24-31] [e0 | e16<<4] ... [e15 | e31<<4]
//
// Dequantization, q = low 4 bits | (bit j of h) << 4, in [0, 31]:
//   x = float(q) * d + m
// in f32, as ggml's dequantize_row_q5_1 evaluates `x0*d + m`: the level
// converts exactly, the product is exact too (a half's 11 significant bits
// times a level of at most 5 bits), so the one rounding is the sum's, to
// nearest even, and a fused multiply-add gives the same bits.
//
// Quantization: our own search for (d, m) and the levels (formats/affine_fit.h),
// never worse per block than the published min/max quantizer.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ5_1 {
  static constexpr int kElems = 32;
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kElems / 2];
};
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block must be 24 bytes as in GGUF");

// n: elements, a multiple of 32.
void dequantize_row_q5_1(const BlockQ5_1* src, float* dst, int64_t n);
void quantize_row_q5_1(const float* src, BlockQ5_1* dst, int64_t n);

}  // namespace kvforge
