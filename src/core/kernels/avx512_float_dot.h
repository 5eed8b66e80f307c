// AVX-512 dot products of weight rows stored as floats of some width (F32,
// F16, BF16) with f32 activations; for the dot_{f32,f16,bf16}_avx512.cpp
// files only (the anonymous namespace gives each a private copy).
//
// Register tiles (register_tile_loop.h) of NR rows x NT tokens: per 16
// columns each row's weights are widened once and used for NT tokens, each
// token's activations loaded once and used for NR rows. One 16-lane FMA
// accumulator per (row, token) over 16-column steps, the last < 16 columns
// in a masked step (masked loads read nothing past the row), lanes summed at
// the end in a fixed order: the same operations for every tile shape.
#pragma once

#include "core/kernels/avx512_helpers.h"
#include "core/kernels/register_tile_loop.h"

namespace kvforge {
namespace {

// 4 x 4: 16 accumulators, 4 widened weight vectors and an activation vector
// in registers; each FMA then needs half a load instead of one.
inline constexpr int kFloatRowTile = 4;
inline constexpr int kFloatTokenTile = 4;

// The Widen of rows of 16-bit floats: widen16(bits) turns 16 of them to f32.
template <__m512 (*widen16)(__m256i)>
struct WidenHalves {
  static __m512 load16(const uint8_t* row, int64_t c) {
    return widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * c)));
  }
  static __m512 load16_masked(const uint8_t* row, int64_t c, __mmask16 m) {
    return widen16(_mm256_maskz_loadu_epi16(m, row + 2 * c));
  }
};

// Widen: __m512 load16(const uint8_t* row, int64_t c) and
//        __m512 load16_masked(const uint8_t* row, int64_t c, __mmask16 m) (zeros elsewhere).
template <class Widen>
struct Avx512FloatDot {
  const MatmulTask& task;

  template <int NR, int NT>
  void tile(int64_t row, int64_t row_step, int64_t t0, float* out) const {
    const int64_t cols = task.cols;
    const uint8_t* w[NR];
    for (int r = 0; r < NR; ++r)
      w[r] = task.weights + (row + r * row_step) * int64_t(task.row_bytes);
    const float* x[NT];
    for (int k = 0; k < NT; ++k) x[k] = task.x + (t0 + k) * cols;
    __m512 acc[NR][NT];
    for (int r = 0; r < NR; ++r)
      for (int k = 0; k < NT; ++k) acc[r][k] = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) {
      __m512 wv[NR];
      for (int r = 0; r < NR; ++r) wv[r] = Widen::load16(w[r], c);
      for (int k = 0; k < NT; ++k) {
        const __m512 xv = _mm512_loadu_ps(x[k] + c);
        for (int r = 0; r < NR; ++r) acc[r][k] = _mm512_fmadd_ps(wv[r], xv, acc[r][k]);
      }
    }
    if (c < cols) {
      const __mmask16 m = __mmask16((1u << (cols - c)) - 1);
      __m512 wv[NR];
      for (int r = 0; r < NR; ++r) wv[r] = Widen::load16_masked(w[r], c, m);
      for (int k = 0; k < NT; ++k) {
        const __m512 xv = _mm512_maskz_loadu_ps(m, x[k] + c);
        for (int r = 0; r < NR; ++r) acc[r][k] = _mm512_fmadd_ps(wv[r], xv, acc[r][k]);
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int k = 0; k < NT; ++k) out[r * NT + k] = avx512_hsum(acc[r][k]);
  }
};

}  // namespace
}  // namespace kvforge
