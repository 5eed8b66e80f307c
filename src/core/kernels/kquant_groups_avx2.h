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

}  // namespace kvforge
