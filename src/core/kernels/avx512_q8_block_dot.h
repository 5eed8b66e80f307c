// AVX-512 VNNI dot products for weights in 32-element blocks with an f16
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
//
// Register tiles (register_tile_loop.h): NR rows x NT tokens per step. The
// NR rows' unpacked weights, corrections and scales are loaded once per pair
// of blocks and used for NT tokens; each token's quants and scales once and
// used for NR rows. Per (row, token) the operations are those of a 1 x 1
// tile in the same order, so a result does not depend on the tile shape.
#pragma once

#include "core/kernels/avx512_helpers.h"
#include "core/kernels/register_tile_loop.h"

namespace kvforge {
namespace {

// Tile shape: 4 x 4 needs 16 accumulators plus 12 vectors of row data, within
// the 32 zmm registers.
inline constexpr int kQ8RowTile = 4;
inline constexpr int kQ8TokenTile = 4;

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

  template <int NR, int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    constexpr int64_t kBytes = WeightBlocks::kBlockBytes;
    const int64_t n_blocks = task.cols / 32;
    const uint8_t* w[NR];
    for (int r = 0; r < NR; ++r) w[r] = task.weights + (row + r) * int64_t(task.row_bytes);
    const uint8_t* a[NT];
    const float* da[NT];
    for (int k = 0; k < NT; ++k) {
      a[k] = reinterpret_cast<const uint8_t*>(task.act_quants + (t0 + k) * task.cols);
      da[k] = task.act_scales + (t0 + k) * n_blocks;
    }
    __m512 acc[NR][NT];
    for (int r = 0; r < NR; ++r)
      for (int k = 0; k < NT; ++k) acc[r][k] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
      __m512i wq[NR], corr[NR];
      __m512 dw[NR];
      for (int r = 0; r < NR; ++r) {
        const uint8_t* blk = w[r] + b * kBytes;
        wq[r] = WeightBlocks::load_pair(blk);
        corr[r] = negated_correction(wq[r]);
        dw[r] = avx512_half_pair_lanes(blk, blk + kBytes);
      }
      for (int k = 0; k < NT; ++k) {
        const __m512i aq = _mm512_loadu_si512(a[k] + 32 * b);
        const __m512 da_lanes = avx512_float_pair_lanes(da[k] + b);
        for (int r = 0; r < NR; ++r) {
          const __m512i isum = _mm512_dpbusd_epi32(corr[r], aq, wq[r]);
          acc[r][k] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[r], da_lanes), acc[r][k]);
        }
      }
    }
    if (b < n_blocks) {  // odd block count: the last block alone, upper lanes all zero
      static const uint8_t kZeroHalf[2] = {0, 0};
      const __m512i pick = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
      __m512i wq[NR], corr[NR];
      __m512 dw[NR];
      for (int r = 0; r < NR; ++r) {
        const uint8_t* blk = w[r] + b * kBytes;
        wq[r] = WeightBlocks::load_single(blk);
        corr[r] = negated_correction(wq[r]);
        dw[r] = avx512_half_pair_lanes(blk, kZeroHalf);
      }
      for (int k = 0; k < NT; ++k) {
        const __m512i aq = _mm512_maskz_loadu_epi8(0xffffffffull, a[k] + 32 * b);
        const __m512 da_lanes =
            _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_load_ss(da[k] + b)));
        for (int r = 0; r < NR; ++r) {
          const __m512i isum = _mm512_dpbusd_epi32(corr[r], aq, wq[r]);
          acc[r][k] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[r], da_lanes), acc[r][k]);
        }
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int k = 0; k < NT; ++k) out[r * NT + k] = avx512_hsum(acc[r][k]);
  }
};

}  // namespace
}  // namespace kvforge
