#include "core/formats/q5_0.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/quantize_checks.h"

namespace kvforge {
namespace {

constexpr int kHalf = BlockQ5_0::kElems / 2;
constexpr int kMinLevel = -16, kMaxLevel = 15;

// The half that stores scale d, clamped to the largest finite half.
uint16_t stored_scale(float d) {
  const uint16_t h = fp32_to_fp16(d);
  return (h & 0x7fffu) >= 0x7c00u ? uint16_t((h & 0x8000u) | 0x7bffu) : h;
}

// Levels w in [-16, 15] nearest to x/d for the stored scale d (all 0 when d
// is 0); returns the block's squared error as dequantized. Clamping before
// rounding keeps x/d (up to inf for a clamped scale) in int range.
double assign_levels(const float* x, float d, int* w) {
  double err = 0;
  for (int i = 0; i < BlockQ5_0::kElems; ++i) {
    w[i] = d == 0.0f ? 0 : nearest_int(std::clamp(x[i] / d, float(kMinLevel), float(kMaxLevel)));
    const double diff = double(x[i]) - double(float(w[i]) * d);
    err += diff * diff;
  }
  return err;
}

struct Fit {
  uint16_t d = 0;  // stored scale
  int w[BlockQ5_0::kElems] = {};
  double err = -1;
};

// Keeps the candidate scale d0 (as stored) if it beats `best`, then the
// least-squares scale for the levels d0 chose.
void try_scale(const float* x, float d0, Fit& best) {
  Fit f;
  f.d = stored_scale(d0);
  f.err = assign_levels(x, fp16_to_fp32(f.d), f.w);
  if (best.err < 0 || f.err < best.err) best = f;
  double sum_xw = 0, sum_w2 = 0;
  for (int i = 0; i < BlockQ5_0::kElems; ++i) {
    sum_xw += double(x[i]) * f.w[i];
    sum_w2 += double(f.w[i]) * f.w[i];
  }
  if (sum_w2 == 0) return;
  Fit refit;
  refit.d = stored_scale(float(sum_xw / sum_w2));
  refit.err = assign_levels(x, fp16_to_fp32(refit.d), refit.w);
  if (refit.err < best.err) best = refit;
}

void quantize_block(const float* x, BlockQ5_0& out) {
  float amax = 0, max = 0;  // the largest-magnitude element, with its sign
  for (int i = 0; i < BlockQ5_0::kElems; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  Fit best;
  if (amax == 0.0f) {
    best.err = 0;
  } else {
    // The published scale first (max on level -16), then max on the levels
    // just inside it, and on the top levels of the other side.
    for (const float level : {-16.0f, -15.5f, -15.0f, -14.5f, -14.0f, 15.0f, 14.5f, 14.0f})
      try_scale(x, max / level, best);
  }
  out.d = best.d;
  uint32_t h = 0;
  for (int j = 0; j < kHalf; ++j) {
    const int lo = best.w[j] - kMinLevel, hi = best.w[j + kHalf] - kMinLevel;
    out.qs[j] = uint8_t((lo & 15) | (hi & 15) << 4);
    h |= uint32_t(lo >> 4) << j | uint32_t(hi >> 4) << (j + kHalf);
  }
  std::memcpy(out.qh, &h, sizeof(h));
}

}  // namespace

void dequantize_row_q5_0(const BlockQ5_0* src, float* dst, int64_t n) {
  for_each_block(src, dst, n, [](const BlockQ5_0& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    uint32_t h;
    std::memcpy(&h, block.qh, sizeof(h));
    for (int j = 0; j < kHalf; ++j) {
      const int lo = (block.qs[j] & 15) | int((h >> j) & 1) << 4;
      const int hi = (block.qs[j] >> 4) | int((h >> (j + kHalf)) & 1) << 4;
      out[j] = float(lo - 16) * d;
      out[j + kHalf] = float(hi - 16) * d;
    }
  });
}

void quantize_row_q5_0(const float* src, BlockQ5_0* dst, int64_t n) {
  quantize_row_blocks("quantize_row_q5_0", src, dst, n, quantize_block);
}

}  // namespace kvforge
