// IQ4_NL (GGUF type 20): 4-bit non-linear quantization in blocks of 32.
// A 4-bit index per element picks one of the 16 int8 levels of
// kIq4Codebook (iq4_codebook.h), which the block scale multiplies.
//
// Block layout (18 bytes, no padding; Q4_0's, with indices for nibbles):
//   offset 0   uint16 d      scale, IEEE half (f16.h)
//   offset 2   uint8  qs[16] packed indices:
//                            element j      (j < 16) = low nibble  of qs[j]
//                            element j + 16 (j < 16) = high nibble of qs[j]
//
//   byte:  0    1  | 2     3     ...  17
//          d (f16) | qs[0] qs[1] ...  qs[15]
//   qs[j] = index[j + 16] << 4 | index[j]
//
// Dequantization (the published reference's f32 operations):
//   x = d * float(kIq4Codebook[index])   (one f32 multiply; the level is exact)
//
// Quantization (ours): for a scale d every element takes the level nearest
// x/d. We try scales that put the block's largest-magnitude element (max,
// with its sign) on or just inside one of the two extreme levels (-127 and
// 113), refit each by least squares to the levels it chose, and keep the one
// whose block as stored (d rounded to a half, elements on their nearest
// levels under that half) has the smallest squared error, every element
// weighted alike: with no activation statistics, each weight's error reaches
// a dot product with the same expected gain. A zero block gets d = 0; a scale
// beyond the half range is clamped to +-65504.
#pragma once

#include <cstdint>

namespace kvforge {

struct BlockIQ4_NL {
  static constexpr int kElems = 32;
  uint16_t d;
  uint8_t qs[kElems / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18, "IQ4_NL block must be 18 bytes as in GGUF");

// n: elements, a multiple of 32.
void dequantize_row_iq4_nl(const BlockIQ4_NL* src, float* dst, int64_t n);
void quantize_row_iq4_nl(const float* src, BlockIQ4_NL* dst, int64_t n);

}  // namespace kvforge
