// MXFP4 (GGUF type 39): the OCP microscaling FP4 format gpt-oss ships its
// experts in, as ggml stores it. Blocks of 32 elements, each an E2M1 float
// (1 sign, 2 exponent, 1 mantissa bit) scaled by a power of two shared by
// the block.
//
// Block layout (17 bytes, no padding):
//   offset 0   uint8  e      E8M0 scale exponent: the block's scale is 2^(e - 127)
//   offset 1   uint8  qs[16] packed 4-bit codes:
//                            element j      (j < 16) = low nibble  of qs[j]
//                            element j + 16 (j < 16) = high nibble of qs[j]
//
// ggml keeps E2M1 values doubled as int8 levels (kMxfp4Levels: code c's
// value times 2, bit 3 the sign) and halves the scale instead:
//   x = float(kMxfp4Levels[code]) * e8m0_half(e),  e8m0_half(e) = 2^(e - 128)
// which is exact in f32 (e = 0 and 1 give the subnormals 2^-128, 2^-127).
//
// Quantization (the published reference, bit for bit): e = floor(log2(amax))
// - 2 + 127 for the block's largest magnitude amax (0 for a zero block),
// each element the code whose value under that scale is nearest (the first
// such code on a tie).
#pragma once

#include <cstdint>

#include "core/formats/levels_plus_128.h"

namespace kvforge {

struct BlockMXFP4 {
  static constexpr int kElems = 32;
  uint8_t e;
  uint8_t qs[kElems / 2];
};
static_assert(sizeof(BlockMXFP4) == 17, "MXFP4 block must be 17 bytes as in GGUF");

// E2M1 values doubled, by 4-bit code (ggml's kvalues_mxfp4).
inline constexpr int8_t kMxfp4Levels[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};
// The same + 128 (levels_plus_128.h).
inline constexpr LevelsPlus128 kMxfp4LevelsPlus128 = levels_plus_128(kMxfp4Levels);

// 2^(e - 128) as f32 bits, exactly as ggml_e8m0_to_fp32_half builds them.
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t(0x00200000) << e : uint32_t(e - 1) << 23;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

// n: elements, a multiple of 32.
void dequantize_row_mxfp4(const BlockMXFP4* src, float* dst, int64_t n);
void quantize_row_mxfp4(const float* src, BlockMXFP4* dst, int64_t n);

}  // namespace kvforge
