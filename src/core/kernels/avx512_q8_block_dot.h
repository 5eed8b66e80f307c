// AVX-512 VNNI dot product for weights in 32-element blocks with an f16
// scale at the start of each block (Q8_0, Q4_0) against Q8 activations; for
// dot_q8_0_avx512.cpp and dot_q4_0_avx512.cpp only.
//
// Two blocks per 512-bit step. vpdpbusd multiplies unsigned by signed bytes,
// so the activations arrive offset by +128 (u = a + 128, see matmul_task.h)
// and the weights w stay signed: sum(u*w) = sum(a*w) + 128*sum(w). The
// correction -128*sum(w) is computed once per weight block (itself one
// vpdpbusd of w with a vector of 128s) and seeds the accumulator of every
// token, so a token costs one vpdpbusd per 64 values, and the integer result
// per 4-byte lane is exact. Lanes 0-7 belong to the first block, 8-15 to the
// second; they are scaled by dw*da per lane and accumulated in f32 by FMA.
#pragma once

#include "core/kernels/avx512_helpers.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// WeightBlocks: kBlockBytes; __m512i load_pair(blk) (64 signed weights of
// blocks blk and blk + kBlockBytes, in element order); __m512i
// load_single(blk) (32 weights, upper 32 bytes zero).
template <class WeightBlocks>
struct Avx512Q8BlockDot {
  const MatmulTask& task;

  static __m512i negated_correction(__m512i wq) {
    const __m512i zero = _mm512_setzero_si512();
    return _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(char(0x80)), wq));
  }

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    constexpr int64_t kBytes = WeightBlocks::kBlockBytes;
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t n_blocks = task.cols / 32;
    const uint8_t* a[NT];
    const float* da[NT];
    __m512 acc[NT];
    for (int k = 0; k < NT; ++k) {
      a[k] = reinterpret_cast<const uint8_t*>(task.act_quants + (t0 + k) * task.cols);
      da[k] = task.act_scales + (t0 + k) * n_blocks;
      acc[k] = _mm512_setzero_ps();
    }
    int64_t b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
      const uint8_t* blk = w + b * kBytes;
      const __m512i wq = WeightBlocks::load_pair(blk);
      const __m512i corr = negated_correction(wq);
      const __m512 dw = avx512_half_pair_lanes(blk, blk + kBytes);
      for (int k = 0; k < NT; ++k) {
        const __m512i isum = _mm512_dpbusd_epi32(corr, _mm512_loadu_si512(a[k] + 32 * b), wq);
        const __m512 scale = _mm512_mul_ps(dw, avx512_float_pair_lanes(da[k] + b));
        acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), scale, acc[k]);
      }
    }
    if (b < n_blocks) {  // odd block count: the last block alone, upper lanes all zero
      static const uint8_t kZeroHalf[2] = {0, 0};
      const uint8_t* blk = w + b * kBytes;
      const __m512i wq = WeightBlocks::load_single(blk);
      const __m512i corr = negated_correction(wq);
      const __m512 dw = avx512_half_pair_lanes(blk, kZeroHalf);
      const __m512i pick = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
      for (int k = 0; k < NT; ++k) {
        const __m512i aq = _mm512_maskz_loadu_epi8(0xffffffffull, a[k] + 32 * b);
        const __m512i isum = _mm512_dpbusd_epi32(corr, aq, wq);
        const __m512 da_lanes =
            _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_load_ss(da[k] + b)));
        acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, da_lanes), acc[k]);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = avx512_hsum(acc[k]);
  }
};

}  // namespace
}  // namespace kvforge
