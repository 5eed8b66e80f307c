// Four K-quant dot products finished at once, for the *_avx2.cpp kernels.
// Each (super-block, token) pair leaves its exact integer sums spread over
// vector lanes: isum and msum (8 int32 lanes each; msum the min or offset
// term). Summing those lanes and forming the pair's f32 products one pair at
// a time costs about as much as the pair's dot product itself; done for four
// pairs together the shuffles, conversions and multiplies are shared. The
// products are those of kquant_accumulate, rounded the same way, so folding
// them with kquant_accumulate_terms gives the same bits.
//
// `static`: each including file gets its own copy (see avx2_helpers.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/formats/q8_k.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_decode_row.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Returns int32 lanes i0 m0 i1 m1 i2 m2 i3 m3: i_n, m_n the lane totals of
// isum[n], msum[n].
static inline __m256i avx2_reduce_four_pairs(const __m256i isum[4], const __m256i msum[4]) {
  // Per pair n: [i01 i23 m01 m23 | i45 i67 m45 m67] (digits: the lanes summed).
  const __m256i s0 = _mm256_hadd_epi32(isum[0], msum[0]);
  const __m256i s1 = _mm256_hadd_epi32(isum[1], msum[1]);
  const __m256i s2 = _mm256_hadd_epi32(isum[2], msum[2]);
  const __m256i s3 = _mm256_hadd_epi32(isum[3], msum[3]);
  // [i0 m0 i1 m1 | the same over lanes 4-7], and for pairs 2, 3.
  const __m256i t01 = _mm256_hadd_epi32(s0, s1);
  const __m256i t23 = _mm256_hadd_epi32(s2, s3);
  return _mm256_add_epi32(_mm256_permute2x128_si256(t01, t23, 0x20),
                          _mm256_permute2x128_si256(t01, t23, 0x31));
}

// The f32 products of four pairs, lanes (d_n * da_n) * i_n, (dmin_n * da_n) * m_n
// for ints = [i0 m0 i1 m1 ...]. scales[n] = d_n | dmin_n << 16 (IEEE halves,
// as stored in a block; dmin_n = 0 for types without a min).
static inline __m256 avx2_kquant_terms(const uint32_t scales[4], const float da[4], __m256i ints) {
  const __m256 d_dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
  const __m256 da_pairs = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(da)),
                                                   _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
  __m256 terms = _mm256_mul_ps(_mm256_mul_ps(d_dmin, da_pairs), _mm256_cvtepi32_ps(ints));
  __asm__("" : "+x"(terms));  // rounded here: never fused into the folding adds
  return terms;
}

// The row tile of the AVX2 kernels that finish their sums four pairs at a
// time (Q2_K, Q3_K): one token four super-blocks a group (kquant_decode_row),
// 2-4 tokens one super-block a group, its weights unpacked once. Format gives
//   kMin: the terms carry a subtracted min term (kquant_accumulate_terms),
//   block_sums<N>(blk, a, isum, msum): the lane sums of blk and tokens a[k],
//   scales(blk): d | dmin << 16 as stored (dmin 0 without a min),
//   adjust(ints): the reduced lanes [i0 m0 i1 m1 ...] to the integers folded.
template <class Block, class Format>
struct KquantGroupsAvx2Dot {
  const MatmulTask& task;

  static float fold(float acc, const float* terms) {
    return Format::kMin ? kquant_accumulate_terms(acc, terms, 1)
                        : kquant_accumulate_scaled_terms(acc, terms, 1);
  }

  // The terms of super-blocks w[0 .. kCount) (kCount <= 4) against one token.
  template <int kCount>
  __m256 group_terms(const Block* w, const BlockQ8_K* a) const {
    __m256i isum[4], msum[4];
    uint32_t scales[4] = {};
    float da[4] = {};
    for (int i = 0; i < 4; ++i) {
      isum[i] = msum[i] = _mm256_setzero_si256();
      if (i < kCount) {
        const BlockQ8_K* ai = a + i;
        Format::template block_sums<1>(w[i], &ai, isum + i, msum + i);
        scales[i] = Format::scales(w[i]);
        da[i] = a[i].d;
      }
    }
    return avx2_kquant_terms(scales, da, Format::adjust(avx2_reduce_four_pairs(isum, msum)));
  }

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    kquant_group_tile<NT, Format::kMin, Block>(*this, task, row, t0, out);
  }

  // NT of 2-4 tokens from t0 against the row's blocks w: one group of four
  // pairs per super-block, the weights unpacked once for all tokens.
  template <int NT>
  void tokens(const Block* w, int64_t t0, int64_t n_blocks, float* out) const {
    static_assert(NT <= 4, "one group of four tokens per super-block");
    float acc[NT] = {};
    for (int64_t b = 0; b < n_blocks; ++b) {
      const BlockQ8_K* a[NT];
      for (int k = 0; k < NT; ++k) a[k] = task.act_k + (t0 + k) * n_blocks + b;
      __m256i isum[4], msum[4];
      uint32_t scales[4] = {};
      float da[4] = {};
      for (int i = NT; i < 4; ++i) isum[i] = msum[i] = _mm256_setzero_si256();
      Format::template block_sums<NT>(w[b], a, isum, msum);
      for (int k = 0; k < NT; ++k) {
        scales[k] = Format::scales(w[b]);
        da[k] = a[k]->d;
      }
      alignas(32) float terms[8];
      _mm256_store_ps(
          terms, avx2_kquant_terms(scales, da, Format::adjust(avx2_reduce_four_pairs(isum, msum))));
      for (int k = 0; k < NT; ++k) acc[k] = fold(acc[k], terms + 2 * k);
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }
};

}  // namespace kvforge
