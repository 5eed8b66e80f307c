#include "core/formats/iq4_xs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/importance_weights.h"
#include "core/formats/iq4_codebook.h"
#include "core/formats/quantize_checks.h"

// The dequantizer's two products are rounded separately, and the quantizer's
// choices must not depend on whether a compiler fuses multiply-adds.
// src/core/CMakeLists.txt builds this file with -ffp-contract=off.

namespace kvforge {
namespace {

constexpr int kSubElems = 32;
constexpr int kSubBlocks = BlockIQ4_XS::kElems / kSubElems;
constexpr int kScaleOffset = 32;  // stored ls = factor + 32, factor in [-32, 31]

// Index of the codebook level nearest to v (in codebook units): the number
// of midpoints between consecutive levels that lie below v.
int nearest_index(float v) {
  int k = 0;
  for (int i = 0; i < 15; ++i) {
    k += v > 0.5f * float(kIq4Codebook[i] + kIq4Codebook[i + 1]) ? 1 : 0;
  }
  return k;
}

// Assigns indices for the scale `scale` (levels scale * codebook) and returns
// the weighted sums sum w x c and sum w c^2 of that assignment.
void assign(const float* x, const float* w, float scale, uint8_t* idx, float& sum_wxc,
            float& sum_wcc) {
  const float inv = 1.0f / scale;
  sum_wxc = 0;
  sum_wcc = 0;
  for (int i = 0; i < kSubElems; ++i) {
    idx[i] = uint8_t(nearest_index(x[i] * inv));
    const float c = float(kIq4Codebook[idx[i]]);
    sum_wxc += w[i] * x[i] * c;
    sum_wcc += w[i] * c * c;
  }
}

// The least-squares scale of sub-block x: for a fixed assignment the best
// scale is sum w x c / sum w c^2 and the weighted error falls by
// (sum w x c)^2 / sum w c^2, so that is the score maximised.
float fit_sub_block(const float* x, const float* w) {
  const float max = largest_magnitude(x, kSubElems), amax = std::fabs(max);
  if (amax < 1e-30f) return 0.0f;
  uint8_t idx[kSubElems];
  float best_scale = 0, best_score = -1;
  // Steps putting the largest value on level -127 (a scale of the opposite
  // sign) or on 113, from a fifth inside them (finer levels for the rest) to
  // a twenty-fifth beyond (clamped to the extreme); each assignment is
  // refitted and reassigned while that improves it.
  for (const float extreme : {float(kIq4Codebook[0]), float(kIq4Codebook[15])}) {
    for (int step = -10; step <= 2; ++step) {
      float scale = max / (extreme * (1.0f + 0.02f * float(step)));
      float last_score = -1;
      for (int refit = 0; refit < 3; ++refit) {
        float sum_wxc = 0, sum_wcc = 0;
        assign(x, w, scale, idx, sum_wxc, sum_wcc);
        if (sum_wcc <= 0 || sum_wxc == 0) break;
        const float score = sum_wxc * sum_wxc / sum_wcc;
        if (score <= last_score) break;  // the reassignment stopped improving
        last_score = score;
        scale = sum_wxc / sum_wcc;
        if (score > best_score) {
          best_score = score;
          best_scale = scale;
        }
      }
    }
  }
  return best_scale;
}

// Weighted error of sub-block x under the stored step dl (= d * factor),
// indices recomputed for it and written to idx.
float encode_sub_block(const float* x, const float* w, float dl, uint8_t* idx) {
  float err = 0;
  for (int i = 0; i < kSubElems; ++i) {
    idx[i] = dl == 0.0f ? uint8_t(8) : uint8_t(nearest_index(x[i] / dl));
    const float diff = dl * float(kIq4Codebook[idx[i]]) - x[i];
    err += w[i] * diff * diff;
  }
  return err;
}

// Chooses every sub-block's 6-bit factor under the stored super-scale d
// (both neighbours of the ideal one); returns the block's weighted error.
float encode_block(const float* x, const float* w, const float* scales, float d, int* factors,
                   uint8_t* idx) {
  float total = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xs = x + j * kSubElems;
    const float* ws = w + j * kSubElems;
    const float ideal = d != 0.0f ? scales[j] / d : 0.0f;
    const int lo = std::clamp(int(std::floor(ideal)), -kScaleOffset, kScaleOffset - 1);
    const int hi = std::min(lo + 1, kScaleOffset - 1);
    uint8_t trial[kSubElems];
    const float err_lo = encode_sub_block(xs, ws, d * float(lo), idx + j * kSubElems);
    const float err_hi = encode_sub_block(xs, ws, d * float(hi), trial);
    if (err_hi < err_lo) {
      std::memcpy(idx + j * kSubElems, trial, kSubElems);
      factors[j] = hi;
      total += err_hi;
    } else {
      factors[j] = lo;
      total += err_lo;
    }
  }
  return total;
}

void quantize_block(const float* x, BlockIQ4_XS& out) {
  float weights[BlockIQ4_XS::kElems];
  float scales[kSubBlocks];
  float max_scale = 0, max_abs_scale = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xs = x + j * kSubElems;
    importance_weights(xs, kSubElems, weights + j * kSubElems);
    scales[j] = fit_sub_block(xs, weights + j * kSubElems);
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  std::memset(&out, 0, sizeof(out));
  int factors[kSubBlocks] = {};
  uint8_t idx[BlockIQ4_XS::kElems];
  if (max_abs_scale == 0.0f) {
    std::memset(idx, 8, sizeof(idx));  // d = 0: every value is 0 whatever the indices
  } else {
    // The largest scale maps to the extra level -32, or slightly inside it
    // when that rounds the others better; keep the d with the lowest error.
    float best_err = INFINITY;
    for (const float divisor : {-32.0f, -31.5f, -31.0f, -30.5f}) {
      const uint16_t d_half = fp32_to_fp16(max_scale / divisor);
      int trial_factors[kSubBlocks];
      uint8_t trial_idx[BlockIQ4_XS::kElems];
      const float err =
          encode_block(x, weights, scales, fp16_to_fp32(d_half), trial_factors, trial_idx);
      if (err < best_err) {
        best_err = err;
        out.d = d_half;
        std::memcpy(factors, trial_factors, sizeof(factors));
        std::memcpy(idx, trial_idx, sizeof(idx));
      }
    }
  }
  for (int j = 0; j < kSubBlocks; ++j) {
    const int ls = factors[j] + kScaleOffset;
    out.scales_l[j / 2] = uint8_t(out.scales_l[j / 2] | (ls & 15) << (4 * (j % 2)));
    out.scales_h = uint16_t(out.scales_h | (ls >> 4) << (2 * j));
    for (int l = 0; l < 16; ++l) {
      out.qs[16 * j + l] = uint8_t(idx[32 * j + l] | idx[32 * j + 16 + l] << 4);
    }
  }
}

}  // namespace

void dequantize_row_iq4_xs(const BlockIQ4_XS* src, float* dst, int64_t n) {
  for_each_block(src, dst, n, [](const BlockIQ4_XS& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < kSubBlocks; ++j) {
      const float dl = d * float(iq4_xs_scale(block, j) - kScaleOffset);
      const uint8_t* q = block.qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        out[32 * j + l] = dl * float(kIq4Codebook[q[l] & 15]);
        out[32 * j + 16 + l] = dl * float(kIq4Codebook[q[l] >> 4]);
      }
    }
  });
}

void quantize_row_iq4_xs(const float* src, BlockIQ4_XS* dst, int64_t n) {
  quantize_row_blocks("quantize_row_iq4_xs", src, dst, n, quantize_block);
}

}  // namespace kvforge
