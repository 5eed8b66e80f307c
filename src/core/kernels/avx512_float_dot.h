// AVX-512 dot products of weight rows stored as floats of some width (F32,
// F16, BF16) with f32 activations; for the dot_{f32,f16,bf16}_avx512.cpp
// files only (the anonymous namespace gives each a private copy).
//
// Per token two 16-lane FMA accumulators over 32 columns per step, one
// 16-column step, then a masked step for the last < 16 columns (masked loads
// read nothing past the row); lanes are summed at the end in a fixed order.
#pragma once

#include "core/kernels/avx512_helpers.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// Widen: __m512 load16(const uint8_t* row, int64_t c) and
//        __m512 load16_masked(const uint8_t* row, int64_t c, __mmask16 m) (zeros elsewhere).
template <class Widen>
struct Avx512FloatDot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t cols = task.cols;
    const float* x[NT];
    __m512 acc0[NT], acc1[NT];
    for (int k = 0; k < NT; ++k) {
      x[k] = task.x + (t0 + k) * cols;
      acc0[k] = _mm512_setzero_ps();
      acc1[k] = _mm512_setzero_ps();
    }
    int64_t c = 0;
    for (; c + 32 <= cols; c += 32) {
      const __m512 w0 = Widen::load16(w, c), w1 = Widen::load16(w, c + 16);
      for (int k = 0; k < NT; ++k) {
        acc0[k] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[k] + c), acc0[k]);
        acc1[k] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x[k] + c + 16), acc1[k]);
      }
    }
    if (c + 16 <= cols) {
      const __m512 w0 = Widen::load16(w, c);
      for (int k = 0; k < NT; ++k)
        acc0[k] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[k] + c), acc0[k]);
      c += 16;
    }
    if (c < cols) {
      const __mmask16 m = __mmask16((1u << (cols - c)) - 1);
      const __m512 w1 = Widen::load16_masked(w, c, m);
      for (int k = 0; k < NT; ++k) {
        acc1[k] = _mm512_fmadd_ps(w1, _mm512_maskz_loadu_ps(m, x[k] + c), acc1[k]);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = avx512_hsum(_mm512_add_ps(acc0[k], acc1[k]));
  }
};

}  // namespace
}  // namespace kvforge
