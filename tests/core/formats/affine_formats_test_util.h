// Oracles for the formats that store 32 values as float(q) * d + m with d, m
// halves and q in [0, max_level] (Q4_1: 15, Q5_1: 31): the published min/max
// quantizer written out from its definition, and the error bound it meets.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/formats/f16.h"

namespace kvforge::testing {

// The decoded value: the product is exact (a half's 11 significant bits
// times a level of at most 5 bits), so only the sum rounds.
inline float affine_decoded(int q, float d, float m) { return float(q) * d + m; }

// The published quantizer of one block: d = (max - min)/max_level, m = min,
// q = min(max_level, trunc((x - min) * (1/d) + 0.5)), d and m stored as
// halves; y gets the decoded values.
inline void published_affine_block(const float* x, int max_level, float* y) {
  const float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
  const float d = (hi - lo) / float(max_level);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const float dh = fp16_to_fp32(fp32_to_fp16(d)), mh = fp16_to_fp32(fp32_to_fp16(lo));
  for (int i = 0; i < 32; ++i) {
    const int q = std::min(max_level, int((x[i] - lo) * id + 0.5f));
    y[i] = affine_decoded(q, dh, mh);
  }
}

inline double block_squared_error(const float* x, const float* y) {
  double err = 0;
  for (int i = 0; i < 32; ++i) err += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  return err;
}

// Bound on |x - decoded| per element for the published quantizer: d/2 from
// rounding to a level, plus the halves' rounding: |q| <= max_level times
// |d - half(d)|, plus |min - half(min)|, each <= max(|v| 2^-11, 2^-25); plus
// f32 rounding of (x - min) * (1/d) and of the decode, a few ulps of the range.
inline double published_affine_bound(const float* x, int max_level) {
  const double lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
  const double d = (hi - lo) / max_level;
  auto half_error = [](double v) { return std::max(std::fabs(v) * 0x1p-11, 0x1p-25); };
  const double f32_slack = (std::fabs(lo) + std::fabs(hi)) * 0x1p-20;
  return d / 2 + max_level * half_error(d) + half_error(lo) + f32_slack;
}

}  // namespace kvforge::testing
