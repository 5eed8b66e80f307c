// Four K-quant dot products finished at once, for the *_avx512.cpp kernels.
// Each (super-block, token) pair leaves its exact integer sums spread over
// vector lanes: isum (16 int32 lanes) and msum (8 lanes; the min or offset
// term). Summing those lanes and forming the pair's f32 products one pair at
// a time costs about as much as the pair's dot product itself; done for four
// pairs together the shuffles, conversions and multiplies are shared. The
// products are those of kquant_accumulate, rounded the same way, so folding
// them with kquant_accumulate_terms gives the same bits.
//
// `static`: each including file gets its own copy (see avx512_helpers.h).
#pragma once

#include <cstdint>

#include "core/kernels/avx512_helpers.h"  // first: its pragmas must precede <immintrin.h>
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_decode_row.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Returns int32 lanes i0 m0 i1 m1 i2 m2 i3 m3: i_n, m_n the lane totals of
// isum[n], msum[n].
static inline __m256i avx512_reduce_four_pairs(const __m512i isum[4], const __m256i msum[4]) {
  // [isum[0] folded to 8 lanes | isum[1] folded], [2 | 3], [msum[0] | msum[1]], [2 | 3].
  const __m512i z0 = _mm512_add_epi32(_mm512_shuffle_i64x2(isum[0], isum[1], 0x44),
                                      _mm512_shuffle_i64x2(isum[0], isum[1], 0xee));
  const __m512i z1 = _mm512_add_epi32(_mm512_shuffle_i64x2(isum[2], isum[3], 0x44),
                                      _mm512_shuffle_i64x2(isum[2], isum[3], 0xee));
  const __m512i z2 = _mm512_inserti64x4(_mm512_castsi256_si512(msum[0]), msum[1], 1);
  const __m512i z3 = _mm512_inserti64x4(_mm512_castsi256_si512(msum[2]), msum[3], 1);
  // Within each 128-bit lane: partial sums [z0 z2 z0 z2], then [z0 z2 z1 z3].
  const __m512i u0 = _mm512_add_epi32(_mm512_unpacklo_epi32(z0, z2), _mm512_unpackhi_epi32(z0, z2));
  const __m512i u1 = _mm512_add_epi32(_mm512_unpacklo_epi32(z1, z3), _mm512_unpackhi_epi32(z1, z3));
  const __m512i v = _mm512_add_epi32(_mm512_unpacklo_epi64(u0, u1), _mm512_unpackhi_epi64(u0, u1));
  // 128-bit lanes 0 + 1 and 2 + 3: [i0 m0 i2 m2] in lane 0, [i1 m1 i3 m3] in lane 2.
  const __m512i w = _mm512_add_epi32(v, _mm512_shuffle_i64x2(v, v, 0xb1));
  return _mm512_castsi512_si256(
      _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 4, 1, 5, 0, 0, 0, 0), w));
}

// The f32 products of four pairs, lanes (d_n * da_n) * i_n, (dmin_n * da_n) * m_n
// for ints = [i0 m0 i1 m1 ...]. scales[n] = d_n | dmin_n << 16 (IEEE halves,
// as stored in a block; dmin_n = 0 for types without a min).
static inline __m256 avx512_kquant_terms(const uint32_t scales[4], const float da[4],
                                         __m256i ints) {
  const __m256 d_dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
  const __m256 da_pairs = _mm256_permutexvar_ps(_mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3),
                                                _mm256_castps128_ps256(_mm_loadu_ps(da)));
  __m256 terms = _mm256_mul_ps(_mm256_mul_ps(d_dmin, da_pairs), _mm256_cvtepi32_ps(ints));
  __asm__("" : "+x"(terms));  // rounded here: never fused into the folding adds
  return terms;
}

// The terms (avx512_kquant_terms) of four pairs, those from `count` on
// zero: pair(n, isum, msum, scale, da) sets pair n's lane sums, its block's
// d | dmin << 16 as stored and its activation scale; adjust maps the
// reduced lanes [i0 m0 i1 m1 ...] to the integers whose products are formed.
template <class Pair, class Adjust>
static inline __m256 avx512_four_pair_terms(int count, Pair&& pair, Adjust&& adjust) {
  __m512i isum[4];
  __m256i msum[4];
  uint32_t scales[4] = {};
  float da[4] = {};
  for (int i = 0; i < 4; ++i) {
    isum[i] = _mm512_setzero_si512();
    msum[i] = _mm256_setzero_si256();
    if (i < count) pair(i, isum[i], msum[i], scales[i], da[i]);
  }
  return avx512_kquant_terms(scales, da, adjust(avx512_reduce_four_pairs(isum, msum)));
}

// Folds one super-block into the accumulators of tokens [0, NT), four at a
// time: sums(k, isum, msum) sets token k's lane sums (isum, and msum for the
// min or offset term) and returns its activation scale; adjust as for
// avx512_four_pair_terms; d_dmin is the block's d | dmin << 16 as stored.
// With kMin the fold is kquant_accumulate's (minus the second product), else
// kquant_accumulate_scaled's, so acc gets the bits of token by token.
template <int NT, bool kMin, class Sums, class Adjust>
static inline void avx512_fold_token_groups(uint32_t d_dmin, float* acc, Sums&& sums,
                                            Adjust&& adjust) {
  for (int k0 = 0; k0 < NT; k0 += 4) {
    const auto pair = [&](int i, __m512i& isum, __m256i& msum, uint32_t& scale, float& da) {
      da = sums(k0 + i, isum, msum);
      scale = d_dmin;
    };
    alignas(32) float terms[8];
    _mm256_store_ps(terms, avx512_four_pair_terms(NT - k0, pair, adjust));
    for (int i = 0; i < 4 && k0 + i < NT; ++i)
      acc[k0 + i] = kMin ? kquant_accumulate_terms(acc[k0 + i], terms + 2 * i, 1)
                         : kquant_accumulate_scaled_terms(acc[k0 + i], terms + 2 * i, 1);
  }
}

// adjust for avx512_fold_token_groups when the lanes are folded as they are.
struct KquantLanesAsSummed {
  __m256i operator()(__m256i ints) const { return ints; }
};

// The row tile of the kernels that unpack a super-block's weights once and
// finish their sums four pairs at a time (Q2_K, Q3_K): one token four
// super-blocks a group (kquant_decode_row), more tokens four at a time per
// super-block (avx512_fold_token_groups). Format gives kMin (the terms carry
// a subtracted min term), weights(blk) (its members hold the constants),
// sums(wt, ak, isum, msum), scales(blk) (d | dmin << 16 as stored) and
// adjust(ints), as avx512_four_pair_terms takes it.
template <class Block, class Format>
struct KquantGroupsAvx512Dot {
  const MatmulTask& task;
  Format format = {};

  // The terms of super-blocks w[0 .. kCount) (kCount <= 4) against one token.
  template <int kCount>
  __m256 group_terms(const Block* w, const BlockQ8_K* a) const {
    const auto pair = [&](int i, __m512i& isum, __m256i& msum, uint32_t& scale, float& da) {
      Format::sums(format.weights(w[i]), a[i], isum, msum);
      scale = Format::scales(w[i]);
      da = a[i].d;
    };
    return avx512_four_pair_terms(kCount, pair, Format::adjust);
  }

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    kquant_group_tile<NT, Format::kMin, Block>(*this, task, row, t0, out);
  }

  // NT > 1 tokens from t0 against the row's blocks w, four at a time per
  // super-block, its weights unpacked once.
  template <int NT>
  void tokens(const Block* w, int64_t t0, int64_t n_blocks, float* out) const {
    float acc[NT] = {};
    for (int64_t b = 0; b < n_blocks; ++b) {
      const auto wt = format.weights(w[b]);
      const auto sums = [&](int k, __m512i& isum, __m256i& msum) {
        const BlockQ8_K& ak = task.act_k[(t0 + k) * n_blocks + b];
        Format::sums(wt, ak, isum, msum);
        return ak.d;
      };
      avx512_fold_token_groups<NT, Format::kMin>(Format::scales(w[b]), acc, sums, Format::adjust);
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }
};

}  // namespace kvforge
