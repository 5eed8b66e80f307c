#include "core/formats/q6_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/importance_weights.h"
#include "core/formats/quantize_checks.h"

namespace kvforge {
namespace {

constexpr int kSubElems = 16;
constexpr int kSubBlocks = BlockQ6_K::kElems / kSubElems;
constexpr int kLevels = 32;  // quants q - 32 in [-32, 31]

// Least-squares scale of sub-block x for levels l in [-32, 31]: the search
// tries steps around max/-32 (the largest-magnitude value lands on the extra
// level -32) and keeps the assignment with the lowest squared error.
float fit_sub_block(const float* x) {
  const float max = largest_magnitude(x, kSubElems), amax = std::fabs(max);
  if (amax < 1e-30f) return 0.0f;
  float best_scale = 0, best_score = -1;
  for (int step = -9; step <= 9; ++step) {
    const float iscale = -(kLevels + 0.1f * float(step)) / max;
    float sum_xl = 0, sum_l2 = 0;
    for (int i = 0; i < kSubElems; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), -kLevels, kLevels - 1);
      sum_xl += x[i] * float(l);
      sum_l2 += float(l * l);
    }
    // Squared error at the optimal scale sum_xl/sum_l2 is sum_x2 - sum_xl^2/sum_l2.
    if (sum_l2 > 0 && sum_xl * sum_xl / sum_l2 > best_score) {
      best_score = sum_xl * sum_xl / sum_l2;
      best_scale = sum_xl / sum_l2;
    }
  }
  return best_scale;
}

// Squared error of sub-block x at step d*sc, levels written to l (0..63).
float encode_sub_block(const float* x, float d, int sc, uint8_t* l) {
  const float step = d * float(sc);
  float err = 0;
  for (int i = 0; i < kSubElems; ++i) {
    const int level =
        step == 0.0f ? 0 : std::clamp(nearest_int(x[i] / step), -kLevels, kLevels - 1);
    l[i] = uint8_t(level + kLevels);
    const float diff = step * float(level) - x[i];
    err += diff * diff;
  }
  return err;
}

void quantize_block(const float* x, BlockQ6_K& out) {
  float scales[kSubBlocks];
  float max_scale = 0, max_abs_scale = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    scales[j] = fit_sub_block(x + j * kSubElems);
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  std::memset(&out, 0, sizeof(out));
  if (max_abs_scale < 1e-30f) {
    // All quants 32 (value 0 even under a nonzero d): low nibbles 0, high bits 2.
    std::memset(out.qh, 0xaa, sizeof(out.qh));
    return;
  }
  // max_scale maps to -128, the extra level of int8, like the quants' -32.
  const float iscale = -128.0f / max_scale;
  out.d = fp32_to_fp16(1.0f / iscale);
  const float d = fp16_to_fp32(out.d);
  uint8_t levels[BlockQ6_K::kElems];
  for (int j = 0; j < kSubBlocks; ++j) {
    // Try both int8 neighbours of the ideal scale against the stored d.
    const float ideal = d != 0.0f ? scales[j] / d : 0.0f;
    const int lo = std::clamp(int(std::floor(ideal)), -128, 127);
    const int hi = std::min(lo + 1, 127);
    uint8_t trial[kSubElems];
    const float err_lo = encode_sub_block(x + j * kSubElems, d, lo, trial);
    const float err_hi = encode_sub_block(x + j * kSubElems, d, hi, levels + j * kSubElems);
    if (err_lo <= err_hi) {
      std::memcpy(levels + j * kSubElems, trial, kSubElems);
      out.scales[j] = int8_t(lo);
    } else {
      out.scales[j] = int8_t(hi);
    }
  }
  for (int h = 0; h < 2; ++h) {
    const uint8_t* l = levels + 128 * h;
    uint8_t* ql = out.ql + 64 * h;
    uint8_t* qh = out.qh + 32 * h;
    for (int i = 0; i < 32; ++i) {
      ql[i] = uint8_t((l[i] & 15) | ((l[i + 64] & 15) << 4));
      ql[i + 32] = uint8_t((l[i + 32] & 15) | ((l[i + 96] & 15) << 4));
      qh[i] = uint8_t((l[i] >> 4) | ((l[i + 32] >> 4) << 2) | ((l[i + 64] >> 4) << 4) |
                      ((l[i + 96] >> 4) << 6));
    }
  }
}

}  // namespace

void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, int64_t n) {
  for_each_block(src, dst, n, [](const BlockQ6_K& block, float* values) {
    const float d = fp16_to_fp32(block.d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = block.ql + 64 * h;
      const uint8_t* qh = block.qh + 32 * h;
      const int8_t* sc = block.scales + 8 * h;
      float* out = values + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        const int s = l / 16;
        out[l] = d * float(sc[s]) * float(q1);
        out[l + 32] = d * float(sc[s + 2]) * float(q2);
        out[l + 64] = d * float(sc[s + 4]) * float(q3);
        out[l + 96] = d * float(sc[s + 6]) * float(q4);
      }
    }
  });
}

void quantize_row_q6_k(const float* src, BlockQ6_K* dst, int64_t n) {
  quantize_row_blocks("quantize_row_q6_k", src, dst, n, quantize_block);
}

}  // namespace kvforge
