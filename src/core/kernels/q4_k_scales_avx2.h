// What the Q4_K and Q5_K AVX2 kernels share: a super-block's 6-bit scales
// and mins (layout in formats/q4_k.h) as vectors, the products of one
// group of 64 values (sub-blocks 2g and 2g+1) with one token, and the fold
// of the super-block's sums into the row's. Per sub-block: vpmaddubsw of
// the unsigned quants with the activations (pair sums <= 2*31*127), then
// vpmaddwd with the sub-block scale; the mins through the activation block
// sums. The two kernels differ only in how they rebuild the quants.
//
// `static`: each including kernel file gets its own copy (see avx2_helpers.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/formats/q8_k.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_groups_avx2.h"
#include "core/kernels/q4_k_scales.h"

namespace kvforge {

struct Q4_KScalesAvx2 {
  // 32-bit lane j: sc[j] in both 16-bit halves, ready to broadcast.
  __m256i sc_pairs;
  // int16 lanes m0 m0 m1 m1 ... m7 m7: bsums[2j] and bsums[2j+1] both
  // belong to sub-block j.
  __m256i mins;
};

static inline Q4_KScalesAvx2 q4_k_scales_avx2(const uint8_t* packed_scales) {
  uint32_t packed[4];
  q4_k_unpack_scale_bytes(packed_scales, packed);
  const __m128i sc_m =
      _mm_setr_epi32(int(packed[0]), int(packed[1]), int(packed[2]), int(packed[3]));
  const __m256i sc32 = _mm256_cvtepu8_epi32(sc_m);
  const __m128i m_bytes = _mm_unpackhi_epi64(sc_m, sc_m);
  return {_mm256_or_si256(sc32, _mm256_slli_epi32(sc32, 16)),
          _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m_bytes, m_bytes))};
}

// sc[j] in every 16-bit lane.
static inline __m256i q4_k_scale_avx2(const Q4_KScalesAvx2& s, int j) {
  return _mm256_permutevar8x32_epi32(s.sc_pairs, _mm256_set1_epi32(j));
}

// Scaled products of a group's quants (lo: sub-block 2g, hi: 2g+1) with the
// token's 64 activations at aq, as int32 partial sums.
static inline __m256i q4_k_group_dot_avx2(__m256i lo, __m256i hi, __m256i sc_lo, __m256i sc_hi,
                                          const int8_t* aq) {
  const __m256i a_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq));
  const __m256i a_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq + 32));
  const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, a_lo), sc_lo);
  const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, a_hi), sc_hi);
  return _mm256_add_epi32(p_lo, p_hi);
}

// acc with the super-block folded in: isum, its scaled products with token
// block ak; d, dmin, the weight block's super-scales.
static inline float q4_k_fold_avx2(float acc, __m256i isum, const Q4_KScalesAvx2& s,
                                   const BlockQ8_K& ak, float d, float dmin) {
  const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ak.bsums));
  int32_t total = 0, msum = 0;
  avx2_hsum2_epi32(isum, _mm256_madd_epi16(bsums, s.mins), total, msum);
  return kquant_accumulate(acc, d, dmin, ak.d, total, msum);
}

// q4_k_fold_avx2 for tokens a[0 .. count), count <= 4, at once: their lane
// sums and f32 products are formed together (kquant_groups_avx2.h) and
// folded as kquant_accumulate folds them, so acc gets the same bits.
// d_dmin: the block's d | dmin << 16, as stored.
static inline void q4_k_fold_tokens_avx2(const __m256i* isum, int count, const Q4_KScalesAvx2& s,
                                         const BlockQ8_K* const* a, uint32_t d_dmin, float* acc) {
  __m256i is[4], ms[4];
  uint32_t scales[4] = {};
  float da[4] = {};
  for (int i = 0; i < 4; ++i) {
    is[i] = ms[i] = _mm256_setzero_si256();
    if (i >= count) continue;
    is[i] = isum[i];
    ms[i] = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i]->bsums)),
                              s.mins);
    scales[i] = d_dmin;
    da[i] = a[i]->d;
  }
  alignas(32) float terms[8];
  _mm256_store_ps(terms, avx2_kquant_terms(scales, da, avx2_reduce_four_pairs(is, ms)));
  for (int i = 0; i < count; ++i) acc[i] = kquant_accumulate_terms(acc[i], terms + 2 * i, 1);
}

// Folds one Q4_K or Q5_K super-block `blk` (isum: its scaled products with
// each token, a[k] + b: token k's block) into the tile's accumulators: alone
// for one token, else the tokens together (q4_k_fold_tokens_avx2).
template <int NT, class Block>
static inline void q4_k_fold_block_avx2(const __m256i* isum, const Q4_KScalesAvx2& s,
                                        const Block& blk, const BlockQ8_K* const* a, int64_t b,
                                        float* acc) {
  if constexpr (NT == 1) {
    const float d = avx2_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
    const float dmin = avx2_load_half(reinterpret_cast<const uint8_t*>(&blk.dmin));
    acc[0] = q4_k_fold_avx2(acc[0], isum[0], s, a[0][b], d, dmin);
  } else {
    const BlockQ8_K* ak[NT];
    for (int k = 0; k < NT; ++k) ak[k] = &a[k][b];
    q4_k_fold_tokens_avx2(isum, NT, s, ak, uint32_t(blk.d) | uint32_t(blk.dmin) << 16, acc);
  }
}

}  // namespace kvforge
