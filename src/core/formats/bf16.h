// bfloat16 (GGUF type BF16) <-> binary32 conversion.
//
// Layout of one element (2 bytes, little-endian in files): the upper half of
// an f32 — bit 15 sign, bits 14-7 exponent (bias 127, same as f32), bits 6-0
// mantissa. Same range as f32, 8 significant bits.
//
// bf16 -> f32 is exact (append 16 zero bits). f32 -> bf16 rounds to nearest,
// ties to even, on the 16 dropped bits; values past the largest bf16 round to
// inf naturally through the carry into the exponent. Subnormals are kept (no
// flush to zero). NaN stays NaN: sign and top payload bits kept, quiet bit
// (0x40) forced so that truncating a payload can never turn a NaN into inf.
#pragma once

#include <bit>
#include <cstdint>

namespace kvforge {

inline float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

inline uint16_t fp32_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40u);
  const uint32_t odd = (bits >> 16) & 1u;
  return uint16_t((bits + 0x7fffu + odd) >> 16);
}

// n elements; no block structure, so any n >= 0.
void dequantize_row_bf16(const uint16_t* src, float* dst, int64_t n);
void quantize_row_bf16(const float* src, uint16_t* dst, int64_t n);

}  // namespace kvforge
