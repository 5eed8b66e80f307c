#include "core/formats/kquant_min_search.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/formats/f16.h"
#include "core/formats/importance_weights.h"
#include "core/formats/quantize_checks.h"

// The choices must not depend on whether a compiler fuses the error sums'
// multiply-adds (GCC would when targeting FMA).
// src/core/CMakeLists.txt builds this file with -ffp-contract=off.

namespace kvforge {
namespace {

constexpr int kSubElems = 32;
constexpr int kSubBlocks = 256 / kSubElems;
constexpr int kMaxParam = 63;     // 6-bit scales and mins
constexpr int kMaxSubElems = 32;  // the longest sub-block of any caller
// Inverse steps from (max_level - 1) / range in tenths.
constexpr MinStepRange kStepRange{1.0f, 20};

float weighted_error(const float* x, const float* w, int n, const uint8_t* q, float scale,
                     float min) {
  float err = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = scale * float(q[i]) - min - x[i];
    err += w[i] * diff * diff;
  }
  return err;
}

void assign_levels(const float* x, int n, float lo, float iscale, int max_level, uint8_t* q) {
  for (int i = 0; i < n; ++i) {
    q[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - lo)), 0, max_level));
  }
}

// Searches step sizes around (hi - lo)/max_level; each level assignment is
// refitted by weighted least squares for (scale, offset) and the lowest
// error kept. The offset is kept <= 0 (min >= 0) because the formats store a
// subtracted min.
MinSubBlockFit fit_sub_block(const float* x, const float* w, int n, int max_level,
                             MinStepRange range) {
  float lo = x[0], hi = x[0], sum_w = 0, sum_wx = 0;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_wx += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);
  if (hi == lo) return {0.0f, -lo};  // constant block: the min alone encodes it
  uint8_t q[kMaxSubElems];
  assign_levels(x, n, lo, max_level / (hi - lo), max_level, q);
  MinSubBlockFit best{(hi - lo) / max_level, -lo};
  float best_err = weighted_error(x, w, n, q, best.scale, best.min);
  for (int step = 0; step <= range.steps; ++step) {
    const float iscale = (max_level - range.below + 0.1f * float(step)) / (hi - lo);
    assign_levels(x, n, lo, iscale, max_level, q);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      sum_l += w[i] * q[i];
      sum_l2 += w[i] * q[i] * q[i];
      sum_xl += w[i] * q[i] * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0) continue;
    float scale = (sum_w * sum_xl - sum_wx * sum_l) / det;
    float offset = (sum_l2 * sum_wx - sum_l * sum_xl) / det;
    if (offset > 0) {  // a positive offset is not representable: refit with offset 0
      offset = 0;
      scale = sum_xl / sum_l2;
    }
    const float err = weighted_error(x, w, n, q, scale, -offset);
    if (err < best_err) {
      best_err = err;
      best = {scale, -offset};
    }
  }
  return best;
}

// The inverse of q4_k_scale_min: stores 6-bit (sc, m) of sub-block j.
void pack_scale_min(uint8_t* scales, int j, int sc, int m) {
  if (j < 4) {
    scales[j] = uint8_t((scales[j] & 0xc0) | sc);
    scales[j + 4] = uint8_t((scales[j + 4] & 0xc0) | m);
  } else {
    scales[j + 4] = uint8_t((sc & 15) | ((m & 15) << 4));
    scales[j - 4] = uint8_t((scales[j - 4] & 63) | ((sc >> 4) << 6));
    scales[j] = uint8_t((scales[j] & 63) | ((m >> 4) << 6));
  }
}

}  // namespace

MinSubBlockFit fit_min_sub_blocks(const float* x, int n_sub, int sub_elems, int max_level,
                                  MinStepRange range, float* w, MinSubBlockFit* fits) {
  if (sub_elems > kMaxSubElems)
    throw std::invalid_argument("fit_min_sub_blocks: sub-blocks of " + std::to_string(sub_elems) +
                                " values, at most " + std::to_string(kMaxSubElems));
  MinSubBlockFit largest;
  for (int j = 0; j < n_sub; ++j) {
    const float* xs = x + j * sub_elems;
    importance_weights(xs, sub_elems, w + j * sub_elems);
    fits[j] = fit_sub_block(xs, w + j * sub_elems, sub_elems, max_level, range);
    largest.scale = std::max(largest.scale, fits[j].scale);
    largest.min = std::max(largest.min, fits[j].min);
  }
  return largest;
}

float encode_min_sub_block(const float* x, const float* w, int n, float step, float min,
                           int max_level, uint8_t* q) {
  for (int i = 0; i < n; ++i) {
    q[i] = step == 0.0f ? 0 : uint8_t(std::clamp(nearest_int((x[i] + min) / step), 0, max_level));
  }
  return weighted_error(x, w, n, q, step, min);
}

void search_kquant_min_block(const float* x, int max_level, KQuantMinBlock& out) {
  float weights[256];
  MinSubBlockFit fits[kSubBlocks];
  const MinSubBlockFit largest =
      fit_min_sub_blocks(x, kSubBlocks, kSubElems, max_level, kStepRange, weights, fits);
  out.d = fp32_to_fp16(largest.scale / kMaxParam);
  out.dmin = fp32_to_fp16(largest.min / kMaxParam);
  const float d = fp16_to_fp32(out.d);
  const float dmin = fp16_to_fp32(out.dmin);
  std::memset(out.scales, 0, sizeof(out.scales));
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xs = x + j * kSubElems;
    const float* ws = weights + j * kSubElems;
    // Rounding a small scale to 6 bits can cost several percent, so try both
    // neighbours of the ideal 6-bit scale and min and keep the best pair.
    const float ideal_sc = d > 0 ? fits[j].scale / d : 0.0f;
    const float ideal_m = dmin > 0 ? fits[j].min / dmin : 0.0f;
    const int sc0 = std::clamp(int(std::floor(ideal_sc)), 0, kMaxParam);
    const int m0 = std::clamp(int(std::floor(ideal_m)), 0, kMaxParam);
    int best_sc = sc0, best_m = m0;
    float best_err = INFINITY;
    uint8_t trial[kSubElems];
    for (int sc = sc0; sc <= std::min(sc0 + 1, kMaxParam); ++sc) {
      for (int m = m0; m <= std::min(m0 + 1, kMaxParam); ++m) {
        const float err = encode_min_sub_block(xs, ws, kSubElems, d * float(sc), dmin * float(m),
                                               max_level, trial);
        if (err < best_err) {
          best_err = err;
          best_sc = sc;
          best_m = m;
          std::memcpy(out.levels + j * kSubElems, trial, kSubElems);
        }
      }
    }
    pack_scale_min(out.scales, j, best_sc, best_m);
  }
}

}  // namespace kvforge
