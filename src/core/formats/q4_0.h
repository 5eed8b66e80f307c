// Q4_0 (GGUF type 2): 4-bit symmetric quantization in blocks of 32.
//
// Block layout (18 bytes, no padding):
//   offset 0   uint16 d      scale, IEEE half (f16.h)
//   offset 2   uint8  qs[16] packed nibbles:
//                            element i      (i < 16) = low nibble  of qs[i]
//                            element i + 16 (i < 16) = high nibble of qs[i]
// Dequantization: x = (nibble - 8) * d (int -> float, one f32 multiply).
// The split "first half in low nibbles, second half in high nibbles" (rather
// than neighbours sharing a byte) lets SIMD code unpack 32 values with one
// AND and one shift, each giving 16 consecutive elements.
//
// Quantization (the published reference): take the element with the largest
// magnitude, keeping its sign: max. d = max / -8, so max itself maps to
// nibble 0 (value -8), the one level the symmetric range [-7, 7] would waste.
// q = min(15, trunc(x/d + 8.5)), i.e. round-half-up of x/d then clamp: values
// of the opposite sign with x/d > 7.5 clip to +7. Error per element: <= |d|/2
// for x/d <= 7.5, (x/d - 7)*|d| <= |d| for the clipped ones, plus the error of
// storing d as a half (<= 8*|d - half(d)|). A zero block gets d = 0, nibble 8.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockQ4_0 {
  static constexpr int kElems = 32;
  uint16_t d;
  uint8_t qs[kElems / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block must be 18 bytes as in GGUF");

// n: elements, a multiple of 32.
void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, int64_t n);
void quantize_row_q4_0(const float* src, BlockQ4_0* dst, int64_t n);

}  // namespace kvforge
