// The AVX2 kernel of the weights paired with Q8 activations whose blocks of
// 32 are one f16 scale and 32 integer levels (Q8_0, Q4_0), for the
// dot_<type>_avx2.cpp files only: per block an exact integer dot product
// (sign trick + vpmaddubsw + vpmaddwd), converted to f32 and accumulated
// with the product of the two block scales by FMA.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/kernels/avx2_helpers.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// Weights: Block, the stored block (its f16 scale first), and
//   static __m256i levels(const uint8_t* block)
// giving the block's 32 integer levels as signed bytes in element order.
template <class Weights>
struct Q8ScaledAvx2Dot {
  using Block = typename Weights::Block;
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t n_blocks = task.cols / Block::kElems;
    const int8_t* a[NT];
    const float* da[NT];
    __m256 acc[NT];
    for (int k = 0; k < NT; ++k) {
      a[k] = task.act_quants + (t0 + k) * task.cols;
      da[k] = task.act_scales + (t0 + k) * n_blocks;
      acc[k] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = w + b * int64_t(sizeof(Block));
      const __m256i wq = Weights::levels(blk);
      const float dw = avx2_load_half(blk);
      for (int k = 0; k < NT; ++k) {
        const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k] + 32 * b));
        const __m256 dot = _mm256_cvtepi32_ps(avx2_dot_i8(wq, aq));
        acc[k] = _mm256_fmadd_ps(dot, _mm256_set1_ps(dw * da[k][b]), acc[k]);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = avx2_hsum(acc[k]);
  }
};

}  // namespace
}  // namespace kvforge
