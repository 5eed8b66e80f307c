#include "core/formats/q3_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/importance_weights.h"
#include "core/formats/quantize_checks.h"

// The definition rounds d * (sc - 32) before multiplying by the quant; a
// compiler building for FMA hardware must not contract anything here either.
// src/core/CMakeLists.txt builds this file with -ffp-contract=off.

namespace kvforge {
namespace {

constexpr int kSubElems = 16;
constexpr int kSubBlocks = BlockQ3_K::kElems / kSubElems;
constexpr int kMinLevel = -4, kMaxLevel = 3;  // 3-bit quants
constexpr int kScaleBias = 32;                // 6-bit scales stored + 32: [-32, 31]
constexpr float kMaxHalf = 65504.0f;

int level_of(float x, float step) {
  return step == 0.0f ? 0 : std::clamp(nearest_int(x / step), kMinLevel, kMaxLevel);
}

// Weighted error of sub-block x at step `step`, levels recomputed for it
// and written to l.
float encode_sub_block(const float* x, const float* w, float step, int8_t* l) {
  float err = 0;
  for (int i = 0; i < kSubElems; ++i) {
    l[i] = int8_t(level_of(x[i], step));
    const float diff = step * float(l[i]) - x[i];
    err += w[i] * diff * diff;
  }
  return err;
}

// Least-squares step of sub-block x for levels in [-4, 3]. Candidates put
// the largest-magnitude value `max` on the extra level -4 or on +3 (the
// scale's sign is free), with steps around each; every assignment is refit
// (step = sum w x l / sum w l^2) and re-rounded until it no longer changes.
// The step with the lowest weighted error is kept.
float fit_sub_block(const float* x, const float* w) {
  const float max = largest_magnitude(x, kSubElems), amax = std::fabs(max);
  if (amax < 1e-30f) return 0.0f;
  float best_step = 0, best_err = INFINITY;
  int8_t l[kSubElems];
  for (const float level : {float(kMinLevel), float(kMaxLevel)}) {
    for (int k = -6; k <= 6; ++k) {
      float step = max / (level + (level < 0 ? -0.1f : 0.1f) * float(k));
      for (int iter = 0; iter < 4; ++iter) {
        float sum_xl = 0, sum_l2 = 0;
        for (int i = 0; i < kSubElems; ++i) {
          l[i] = int8_t(level_of(x[i], step));
          sum_xl += w[i] * x[i] * l[i];
          sum_l2 += w[i] * float(l[i] * l[i]);
        }
        if (sum_l2 <= 0) break;
        const float refit = sum_xl / sum_l2;
        if (refit == step) break;
        step = refit;
      }
      const float err = encode_sub_block(x, w, step, l);
      if (err < best_err) {
        best_err = err;
        best_step = step;
      }
    }
  }
  return best_step;
}

// One encoding of a super-block under a given super-scale.
struct Encoding {
  float d = 0;
  int8_t scale[kSubBlocks] = {};         // sc - 32, in [-32, 31]
  int8_t level[BlockQ3_K::kElems] = {};  // in [-4, 3]
  float err = 0;
};

// Each sub-block's 6-bit scale: the best grid point around its own fit
// under the super-scale d.
void choose_grid_points(const float* x, const float* w, const float* steps, Encoding& e) {
  e.err = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xs = x + j * kSubElems;
    const float* ws = w + j * kSubElems;
    const float ideal = e.d != 0.0f ? steps[j] / e.d : 0.0f;
    const int lo = std::clamp(int(std::floor(ideal)) - 1, -kScaleBias, kScaleBias - 1);
    const int hi = std::min(lo + 3, kScaleBias - 1);
    float best_err = INFINITY;
    int8_t trial[kSubElems];
    for (int s = lo; s <= hi; ++s) {
      const float err = encode_sub_block(xs, ws, e.d * float(s), trial);
      if (err < best_err) {
        best_err = err;
        e.scale[j] = int8_t(s);
        std::memcpy(e.level + j * kSubElems, trial, kSubElems);
      }
    }
    e.err += best_err;
  }
}

// Weighted least-squares super-scale for the chosen scales and levels:
// x ~= d * (scale * level) over the whole block. 0 when degenerate.
float refit_super_scale(const float* x, const float* w, const Encoding& e) {
  double saa = 0, sax = 0;
  for (int i = 0; i < BlockQ3_K::kElems; ++i) {
    const double a = double(e.scale[i / kSubElems]) * e.level[i];
    saa += w[i] * a * a;
    sax += w[i] * a * x[i];
  }
  return saa > 0 ? float(std::clamp(sax / saa, -double(kMaxHalf), double(kMaxHalf))) : 0.0f;
}

void pack_block(const Encoding& e, BlockQ3_K& out) {
  std::memset(&out, 0, sizeof(out));
  out.d = fp32_to_fp16(e.d);
  for (int j = 0; j < kSubBlocks; ++j) {
    const int sc = e.scale[j] + kScaleBias;
    out.scales[j % 8] |= uint8_t((sc & 15) << (j < 8 ? 0 : 4));
    out.scales[8 + j % 4] |= uint8_t((sc >> 4) << (2 * (j / 4)));
  }
  for (int e_idx = 0; e_idx < BlockQ3_K::kElems; ++e_idx) {
    const int stored = e.level[e_idx] - kMinLevel;  // low | high << 2, in [0, 7]
    const int h = e_idx / 128, k = (e_idx % 128) / 32, l = e_idx % 32;
    out.qs[32 * h + l] |= uint8_t((stored & 3) << (2 * k));
    out.hmask[l] |= uint8_t((stored >> 2) << (e_idx / 32));
  }
}

void quantize_block(const float* x, BlockQ3_K& out) {
  float weights[BlockQ3_K::kElems];
  float steps[kSubBlocks];
  float max_step = 0, max_abs_step = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xs = x + j * kSubElems;
    importance_weights(xs, kSubElems, weights + j * kSubElems);
    steps[j] = fit_sub_block(xs, weights + j * kSubElems);
    if (std::fabs(steps[j]) > max_abs_step) {
      max_abs_step = std::fabs(steps[j]);
      max_step = steps[j];
    }
  }
  Encoding best;
  // The largest step maps to -32, the extra grid point, like the levels' -4.
  best.d = fp16_to_fp32(fp32_to_fp16(std::clamp(max_step / -32.0f, -kMaxHalf, kMaxHalf)));
  choose_grid_points(x, weights, steps, best);
  // Refitting d moves every sub-block's grid; stop when that no longer
  // lowers the block's error.
  constexpr int kMaxRefits = 4;
  for (int it = 0; it < kMaxRefits && best.d != 0.0f; ++it) {
    Encoding trial;
    trial.d = fp16_to_fp32(fp32_to_fp16(refit_super_scale(x, weights, best)));
    if (trial.d == best.d || trial.d == 0.0f) break;
    choose_grid_points(x, weights, steps, trial);
    if (!(trial.err < best.err)) break;
    best = trial;
  }
  pack_block(best, out);
}

}  // namespace

void dequantize_row_q3_k(const BlockQ3_K* src, float* dst, int64_t n) {
  for_each_block(src, dst, n, [](const BlockQ3_K& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < kSubBlocks; ++j) {
      const float step = d * float(q3_k_scale(block.scales, j) - kScaleBias);
      for (int i = 0; i < kSubElems; ++i) {
        const int e = 16 * j + i;
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        const int low = (block.qs[32 * h + l] >> (2 * k)) & 3;
        const int high = (block.hmask[l] >> (e / 32)) & 1;
        out[e] = step * float(low - (high ? 0 : 4));
      }
    }
  });
}

void quantize_row_q3_k(const float* src, BlockQ3_K* dst, int64_t n) {
  quantize_row_blocks("quantize_row_q3_k", src, dst, n, quantize_block);
}

}  // namespace kvforge
