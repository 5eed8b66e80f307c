#include "core/formats/kquant_min_search.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/f16.h"
#include "core/formats/importance_weights.h"
#include "core/formats/quantize_checks.h"

// The choices must not depend on whether a compiler fuses the error sums'
// multiply-adds (GCC would when targeting FMA).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace kvforge {
namespace {

constexpr int kSubElems = 32;
constexpr int kSubBlocks = 256 / kSubElems;
constexpr int kMaxParam = 63;  // 6-bit scales and mins

// x ~= scale * q - min with q in [0, max_level]; min >= 0 (the formats subtract it).
struct SubBlockFit {
  float scale = 0;
  float min = 0;
};

float weighted_error(const float* x, const float* w, const uint8_t* q, float scale, float min) {
  float err = 0;
  for (int i = 0; i < kSubElems; ++i) {
    const float diff = scale * float(q[i]) - min - x[i];
    err += w[i] * diff * diff;
  }
  return err;
}

void assign_levels(const float* x, float lo, float iscale, int max_level, uint8_t* q) {
  for (int i = 0; i < kSubElems; ++i) {
    q[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - lo)), 0, max_level));
  }
}

// Searches step sizes around (hi - lo)/max_level; each level assignment is
// refitted by weighted least squares for (scale, offset) and the lowest
// error kept. The offset is kept <= 0 (min >= 0) because the formats store a
// subtracted min.
SubBlockFit fit_sub_block(const float* x, const float* w, int max_level) {
  float lo = x[0], hi = x[0], sum_w = 0, sum_wx = 0;
  for (int i = 0; i < kSubElems; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_wx += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);
  if (hi == lo) return {0.0f, -lo};  // constant block: the min alone encodes it
  uint8_t q[kSubElems];
  assign_levels(x, lo, max_level / (hi - lo), max_level, q);
  SubBlockFit best{(hi - lo) / max_level, -lo};
  float best_err = weighted_error(x, w, q, best.scale, best.min);
  constexpr int kSteps = 20;
  for (int step = 0; step <= kSteps; ++step) {
    const float iscale = (max_level - 1.0f + 0.1f * float(step)) / (hi - lo);
    assign_levels(x, lo, iscale, max_level, q);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < kSubElems; ++i) {
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
    const float err = weighted_error(x, w, q, scale, -offset);
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

// Weighted error of sub-block x encoded with 6-bit (sc, m) under the stored
// super-scales, levels recomputed for those values; levels written to q.
float encode_sub_block(const float* x, const float* w, float d, float dmin, int sc, int m,
                       int max_level, uint8_t* q) {
  const float step = d * float(sc);
  const float min = dmin * float(m);
  for (int i = 0; i < kSubElems; ++i) {
    q[i] = step == 0.0f ? 0 : uint8_t(std::clamp(nearest_int((x[i] + min) / step), 0, max_level));
  }
  return weighted_error(x, w, q, step, min);
}

}  // namespace

void search_kquant_min_block(const float* x, int max_level, KQuantMinBlock& out) {
  float weights[256];
  SubBlockFit fits[kSubBlocks];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xs = x + j * kSubElems;
    importance_weights(xs, kSubElems, weights + j * kSubElems);
    fits[j] = fit_sub_block(xs, weights + j * kSubElems, max_level);
    max_scale = std::max(max_scale, fits[j].scale);
    max_min = std::max(max_min, fits[j].min);
  }
  out.d = fp32_to_fp16(max_scale / kMaxParam);
  out.dmin = fp32_to_fp16(max_min / kMaxParam);
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
        const float err = encode_sub_block(xs, ws, d, dmin, sc, m, max_level, trial);
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
