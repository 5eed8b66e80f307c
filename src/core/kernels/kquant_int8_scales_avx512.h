// What the Q3_K and Q6_K tile kernels (Q3_KTiles16, Q6_KTiles16; matmul.h)
// share: 16 signed 8-bit sub-block scales per row, held as 4 words whose
// 32-bit lane n carries row n's scales 4i .. 4i + 3 as bytes, and the tiles'
// 16 f16 d stored after all the tiles.
//
// Per (row, token) both kernels subtract offset * sum_s sc[s] * bsums[s] from
// the quant sums; with the scales as int16 pairs (sc[4i], sc[4i + 2]) and
// (sc[4i + 1], sc[4i + 3]) of each lane and the token's block sums paired
// the same way, that is 8 vpdpwssd per token and super-block.
//
// `static`: each including kernel file gets its own copy (see avx512_helpers.h).
#pragma once

#include <cstdint>

#include "core/formats/q8_k.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/kquant_panels_avx512.h"
#include "core/kernels/matmul_task.h"

namespace kvforge {

// A token's block sums for the scale pairs: pair i holds
// bsums[4(i / 2) + i % 2] | bsums[4(i / 2) + i % 2 + 2] << 16 (i < 8).
static inline void int8_scale_sum_pairs(const BlockQ8_K& a, int32_t pairs[8]) {
  for (int i = 0; i < 8; ++i) {
    const int s = 4 * (i / 2) + i % 2;
    pairs[i] = int32_t(uint32_t(uint16_t(a.bsums[s])) | uint32_t(uint16_t(a.bsums[s + 2])) << 16);
  }
}

// The 4 scale words as the int16 pairs vpdpwssd takes: even[i] holds
// (sc[4i], sc[4i + 2]), odd[i] (sc[4i + 1], sc[4i + 3]) in each lane.
struct Int8ScalePairs {
  __m512i even[4], odd[4];
};

static inline Int8ScalePairs int8_scale_pairs(const __m512i words[4]) {
  Int8ScalePairs s;
  for (int i = 0; i < 4; ++i) {
    s.even[i] = _mm512_srai_epi16(_mm512_slli_epi16(words[i], 8), 8);
    s.odd[i] = _mm512_srai_epi16(words[i], 8);
  }
  return s;
}

// sum_s sc[s] * bsums[s] of the 16 rows for one token (its 8 sum pairs).
static inline __m512i int8_scale_bsum_dot(const Int8ScalePairs& s, const int32_t* pairs) {
  __m512i sum = _mm512_setzero_si512();
  for (int i = 0; i < 4; ++i) {
    sum = _mm512_dpwssd_epi32(sum, s.even[i], _mm512_set1_epi32(pairs[2 * i]));
    sum = _mm512_dpwssd_epi32(sum, s.odd[i], _mm512_set1_epi32(pairs[2 * i + 1]));
  }
  return sum;
}

// A panel's factors (the scales as int32 lanes), coefs (the same scales as
// the int16 pairs sc[4i] | sc[4i + 1] << 16, sc[4i + 2] | sc[4i + 3] << 16:
// the offset's), d (the tile's 16 f16 d at `d`) and a zero dmin.
static inline void store_int8_scale_panel(const __m512i words[4], const uint16_t* d,
                                          KquantPanelBlock& p) {
  const __m512i lo16 = _mm512_set1_epi32(0xffff);
  for (int i = 0; i < 4; ++i) {
    const __m512i s0 = _mm512_srai_epi32(_mm512_slli_epi32(words[i], 24), 24);
    const __m512i s1 = _mm512_srai_epi32(_mm512_slli_epi32(words[i], 16), 24);
    const __m512i s2 = _mm512_srai_epi32(_mm512_slli_epi32(words[i], 8), 24);
    const __m512i s3 = _mm512_srai_epi32(words[i], 24);
    _mm512_store_si512(p.factors[4 * i], s0);
    _mm512_store_si512(p.factors[4 * i + 1], s1);
    _mm512_store_si512(p.factors[4 * i + 2], s2);
    _mm512_store_si512(p.factors[4 * i + 3], s3);
    _mm512_store_si512(p.coefs[2 * i],
                       _mm512_or_si512(_mm512_and_si512(s0, lo16), _mm512_slli_epi32(s1, 16)));
    _mm512_store_si512(p.coefs[2 * i + 1],
                       _mm512_or_si512(_mm512_and_si512(s2, lo16), _mm512_slli_epi32(s3, 16)));
  }
  _mm512_store_ps(p.d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(d))));
  _mm512_store_ps(p.dmin, _mm512_setzero_ps());
}

}  // namespace kvforge
