// Q4_1 (GGUF type 3): 4-bit asymmetric quantization in blocks of 32.
//
// Block layout (20 bytes, no padding):
//   offset 0   uint16 d      step, IEEE half (f16.h)
//   offset 2   uint16 m      offset, IEEE half: the value of level 0
//   offset 4   uint8  qs[16] packed nibbles:
//                            element i      (i < 16) = low nibble  of qs[i]
//                            element i + 16 (i < 16) = high nibble of qs[i]
//
//   byte:  0    1    2    3    4           5           ...  19
//          [ d      ][ m      ][e0 | e16<<4][e1 | e17<<4] ... [e15 | e31<<4]
//
// Dequantization, q = the element's nibble in [0, 15]:
//   x = float(q) * d + m
// in f32, as ggml's dequantize_row_q4_1 evaluates `x0*d + m`: the level
// converts exactly, the product is exact too (a half's 11 significant bits
// times a level of at most 5 bits), so the one rounding is the sum's, to
// nearest even, and a fused multiply-add gives the same bits.
// Unlike Q4_0 the levels are unsigned and the block carries its own offset,
// so an asymmetric range (all weights positive, say) uses all 16 levels.
//
// Quantization: our own search for (d, m) and the levels (formats/affine_fit.h),
// never worse per block than the published min/max quantizer.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ4_1 {
  static constexpr int kElems = 32;
  uint16_t d;
  uint16_t m;
  uint8_t qs[kElems / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block must be 20 bytes as in GGUF");

// n: elements, a multiple of 32.
void dequantize_row_q4_1(const BlockQ4_1* src, float* dst, int64_t n);
void quantize_row_q4_1(const float* src, BlockQ4_1* dst, int64_t n);

}  // namespace kvforge
