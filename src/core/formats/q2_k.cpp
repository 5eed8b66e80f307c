#include "core/formats/q2_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/kquant_min_search.h"
#include "core/formats/quantize_checks.h"

// The definition rounds d*sc*q and dmin*m separately before subtracting; a
// compiler building for FMA hardware must not fuse them (GCC would by default).
// src/core/CMakeLists.txt builds this file with -ffp-contract=off.

namespace kvforge {
namespace {

constexpr int kSubElems = 16;
constexpr int kSubBlocks = BlockQ2_K::kElems / kSubElems;
constexpr int kMaxLevel = 3;   // 2-bit quants
constexpr int kMaxParam = 15;  // 4-bit scales and mins
constexpr float kMaxHalf = 65504.0f;

// With only four levels the best step is often well away from (hi - lo)/3
// (letting the extremes clip), hence a wider range of candidate steps than
// Q4_K's: inverse steps from (3 - 0.6) / range in 24 tenths.
constexpr MinStepRange kStepRange{0.6f, 24};

// One encoding of a super-block under given super-scales.
struct Encoding {
  float d = 0, dmin = 0;
  uint8_t sc[kSubBlocks] = {}, m[kSubBlocks] = {};
  uint8_t q[BlockQ2_K::kElems] = {};
  float err = 0;
};

// The 4-bit (sc, m) of each sub-block: the best of the grid points around
// the sub-block's own fit under the super-scales d and dmin.
void choose_grid_points(const float* x, const float* w, const MinSubBlockFit* fits, Encoding& e) {
  e.err = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xs = x + j * kSubElems;
    const float* ws = w + j * kSubElems;
    const float ideal_sc = e.d > 0 ? fits[j].scale / e.d : 0.0f;
    const float ideal_m = e.dmin > 0 ? fits[j].min / e.dmin : 0.0f;
    const int sc0 = std::clamp(int(std::floor(ideal_sc)) - 1, 0, kMaxParam);
    const int m0 = std::clamp(int(std::floor(ideal_m)) - 1, 0, kMaxParam);
    float best_err = INFINITY;
    uint8_t trial[kSubElems];
    for (int sc = sc0; sc <= std::min(sc0 + 3, kMaxParam); ++sc) {
      for (int m = m0; m <= std::min(m0 + 3, kMaxParam); ++m) {
        const float err = encode_min_sub_block(xs, ws, kSubElems, e.d * float(sc),
                                               e.dmin * float(m), kMaxLevel, trial);
        if (err < best_err) {
          best_err = err;
          e.sc[j] = uint8_t(sc);
          e.m[j] = uint8_t(m);
          std::memcpy(e.q + j * kSubElems, trial, kSubElems);
        }
      }
    }
    e.err += best_err;
  }
}

// Weighted least-squares super-scales for the chosen grid points and quants:
// x ~= d * (sc * q) - dmin * m over the whole block, dmin >= 0, d >= 0.
// Returns false when the system is degenerate (nothing to refit).
bool refit_super_scales(const float* x, const float* w, const Encoding& e, float& d, float& dmin) {
  double saa = 0, sab = 0, sbb = 0, sax = 0, sbx = 0;
  for (int i = 0; i < BlockQ2_K::kElems; ++i) {
    const double a = double(e.sc[i / kSubElems]) * e.q[i];
    const double b = e.m[i / kSubElems];
    saa += w[i] * a * a;
    sab += w[i] * a * b;
    sbb += w[i] * b * b;
    sax += w[i] * a * x[i];
    sbx += w[i] * b * x[i];
  }
  // Minimize sum w (d a - dmin b - x)^2: [saa -sab; -sab sbb] [d; dmin] = [sax; -sbx].
  const double det = saa * sbb - sab * sab;
  if (saa <= 0 && sbb <= 0) return false;
  double dd = 0, dm = 0;
  if (saa > 0 && sbb > 0 && det > 1e-12 * saa * sbb) {
    dd = (sax * sbb - sab * sbx) / det;
    dm = (sax * sab - saa * sbx) / det;
  }
  if (dm < 0 || dd < 0 || det <= 1e-12 * saa * sbb) {
    // Boundary: one of the two alone (the other zero); keep the better.
    const double d_only = saa > 0 ? std::max(0.0, sax / saa) : 0.0;
    const double m_only = sbb > 0 ? std::max(0.0, -sbx / sbb) : 0.0;
    const double gain_d = d_only * sax, gain_m = -m_only * sbx;
    dd = gain_d >= gain_m ? d_only : 0.0;
    dm = gain_d >= gain_m ? 0.0 : m_only;
  }
  d = float(std::min(dd, double(kMaxHalf)));
  dmin = float(std::min(dm, double(kMaxHalf)));
  return true;
}

void quantize_block(const float* x, BlockQ2_K& out) {
  float weights[BlockQ2_K::kElems];
  MinSubBlockFit fits[kSubBlocks];
  const MinSubBlockFit largest =
      fit_min_sub_blocks(x, kSubBlocks, kSubElems, kMaxLevel, kStepRange, weights, fits);
  Encoding best;
  best.d = fp16_to_fp32(fp32_to_fp16(std::min(largest.scale / kMaxParam, kMaxHalf)));
  best.dmin = fp16_to_fp32(fp32_to_fp16(std::min(largest.min / kMaxParam, kMaxHalf)));
  choose_grid_points(x, weights, fits, best);
  // Refitting the super-scales moves every sub-block's grid; stop when that
  // no longer lowers the block's error.
  constexpr int kMaxRefits = 4;
  for (int it = 0; it < kMaxRefits; ++it) {
    Encoding trial;
    if (!refit_super_scales(x, weights, best, trial.d, trial.dmin)) break;
    trial.d = fp16_to_fp32(fp32_to_fp16(trial.d));
    trial.dmin = fp16_to_fp32(fp32_to_fp16(trial.dmin));
    if (trial.d == best.d && trial.dmin == best.dmin) break;
    choose_grid_points(x, weights, fits, trial);
    if (!(trial.err < best.err)) break;
    best = trial;
  }
  out.d = fp32_to_fp16(best.d);
  out.dmin = fp32_to_fp16(best.dmin);
  for (int j = 0; j < kSubBlocks; ++j) out.scales[j] = uint8_t(best.sc[j] | best.m[j] << 4);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = best.q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      out.qs[32 * h + l] = uint8_t(q[l] | q[l + 32] << 2 | q[l + 64] << 4 | q[l + 96] << 6);
    }
  }
}

}  // namespace

void dequantize_row_q2_k(const BlockQ2_K* src, float* dst, int64_t n) {
  for_each_block(src, dst, n, [](const BlockQ2_K& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    for (int j = 0; j < kSubBlocks; ++j) {
      const float step = d * float(block.scales[j] & 15);
      const float min = dmin * float(block.scales[j] >> 4);
      // Sub-block j = 8h + 2k + s holds elements 128h + 32k + 16s + (0..15).
      const int h = j / 8, k = (j % 8) / 2, s = j % 2;
      const uint8_t* q = block.qs + 32 * h + 16 * s;
      for (int l = 0; l < kSubElems; ++l) {
        out[16 * j + l] = step * float((q[l] >> (2 * k)) & 3) - min;
      }
    }
  });
}

void quantize_row_q2_k(const float* src, BlockQ2_K* dst, int64_t n) {
  quantize_row_blocks("quantize_row_q2_k", src, dst, n, quantize_block);
}

}  // namespace kvforge
