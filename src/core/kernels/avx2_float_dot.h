// AVX2 dot products of weight rows stored as floats of some width (F32, F16,
// BF16) with f32 activations; for the dot_{f32,f16,bf16}_avx2.cpp files only
// (the anonymous namespace gives each of them a private copy).
//
// Per token two 8-lane FMA accumulators over 16 columns per step, an 8-column
// step, then a scalar tail; lanes are summed at the end in a fixed order.
#pragma once

#include <immintrin.h>

#include "core/kernels/avx2_helpers.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// Widen: __m256 load8(const uint8_t* row, int64_t c) and float load1(row, c).
template <class Widen>
struct Avx2FloatDot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t cols = task.cols;
    const float* x[NT];
    __m256 acc0[NT], acc1[NT];
    float tail[NT];
    for (int k = 0; k < NT; ++k) {
      x[k] = task.x + (t0 + k) * cols;
      acc0[k] = _mm256_setzero_ps();
      acc1[k] = _mm256_setzero_ps();
      tail[k] = 0.0f;
    }
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) {
      const __m256 w0 = Widen::load8(w, c), w1 = Widen::load8(w, c + 8);
      for (int k = 0; k < NT; ++k) {
        acc0[k] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[k] + c), acc0[k]);
        acc1[k] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x[k] + c + 8), acc1[k]);
      }
    }
    if (c + 8 <= cols) {
      const __m256 w0 = Widen::load8(w, c);
      for (int k = 0; k < NT; ++k)
        acc0[k] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[k] + c), acc0[k]);
      c += 8;
    }
    for (; c < cols; ++c) {
      const float wv = Widen::load1(w, c);
      for (int k = 0; k < NT; ++k) tail[k] += wv * x[k][c];
    }
    for (int k = 0; k < NT; ++k) out[k] = avx2_hsum(_mm256_add_ps(acc0[k], acc1[k])) + tail[k];
  }
};

}  // namespace
}  // namespace kvforge
