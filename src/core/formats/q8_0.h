// Q8_0 (GGUF type 8): 8-bit symmetric quantization in blocks of 32.
//
// Block layout (34 bytes, no padding):
//   offset 0   uint16 d      scale, IEEE half (f16.h)
//   offset 2   int8   qs[32] quants, element i of the block is qs[i]
// Dequantization: x[i] = qs[i] * d (int -> float, then one f32 multiply).
//
// Quantization (the published reference): d = amax / 127 where amax is the
// largest |x| of the block, q = round(x / d) with ties away from zero
// (roundf), computed as x * (1/d). The block's largest magnitude maps to
// +-127, so q is in [-127, 127]; -128 never appears but is legal to decode.
// A block of zeros gets d = 0 and q = 0. Error per element <= d/2 plus the
// error of storing d as a half: |x - q*half(d)| <= d/2 + 127*|d - half(d)|.
// Why 32: one block is one 256-bit register of quants, and a scale every 32
// weights keeps an outlier from costing precision for more than 31 others.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ8_0 {
  static constexpr int kElems = 32;
  uint16_t d;
  int8_t qs[kElems];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must be 34 bytes as in GGUF");

// n: elements, a multiple of 32.
void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t n);
void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t n);

}  // namespace kvforge
