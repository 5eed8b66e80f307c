// IEEE 754 binary16 ("half", GGUF type F16) <-> binary32 conversion.
//
// Layout of one element (2 bytes, little-endian in files):
//   bit 15     sign
//   bits 14-10 exponent, bias 15 (0 = zero/subnormal, 31 = inf/NaN)
//   bits 9-0   mantissa
// Range: largest finite 65504, smallest normal 2^-14, smallest subnormal 2^-24.
//
// f16 -> f32 is exact (every half is a float). f32 -> f16 rounds to nearest,
// ties to even, with gradual underflow into subnormals and overflow to inf at
// >= 65520 (the halfway point above 65504, which ties to the even "next" value
// 2^16, i.e. inf). NaN stays NaN: the sign and the top 10 payload bits are
// kept and the quiet bit is set, which is exactly what the F16C instruction
// vcvtps2ph does, so the SIMD kernels and this scalar code agree bit for bit.
//
// These are inline for the scalar code paths; *_avx2.cpp / *_avx512.cpp files
// must not call them (they use the F16C instructions instead), see
// cpu_features.h for why.
#pragma once

#include <bit>
#include <cstdint>

namespace kvforge {

inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float (10-bit integer times a power of two).
    const float magnitude = float(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  // Normal: rebias the exponent from 15 to 127 and widen the mantissa.
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline uint16_t fp32_to_fp16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: quiet it, keep the top payload bits
    return uint16_t(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 (or inf) -> inf
  if (magnitude < 0x38800000u) {
    // Below 2^-14: the result is subnormal (or zero, or rounds up to 2^-14).
    // Adding 0.5f puts the value where one float ulp is 2^-24, the half
    // subnormal step, so the hardware addition performs the RNE rounding.
    const float shifted = std::bit_cast<float>(magnitude) + 0.5f;
    return uint16_t(sign | (std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(0.5f)));
  }
  // Normal: rebias the exponent (-112 << 23) and round the 13 dropped bits to
  // nearest even; a mantissa carry correctly bumps the exponent.
  const uint32_t odd = (magnitude >> 13) & 1u;
  const uint32_t rounded = magnitude + 0xc8000fffu + odd;
  return uint16_t(sign | (rounded >> 13));
}

// n elements; no block structure, so any n >= 0. At the AVX2 and AVX-512
// levels these run the F16C versions below (same bits).
void dequantize_row_f16(const uint16_t* src, float* dst, int64_t n);
void quantize_row_f16(const float* src, uint16_t* dst, int64_t n);
void dequantize_row_f16_avx2(const uint16_t* src, float* dst, int64_t n);
void quantize_row_f16_avx2(const float* src, uint16_t* dst, int64_t n);

}  // namespace kvforge
