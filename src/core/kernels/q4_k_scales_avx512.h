// What the Q4_K and Q5_K AVX-512 kernels share: a super-block's 6-bit
// scales and mins (layout in formats/q4_k.h) as vectors, and its exact
// integer sums against one token. Per group g of 64 values (sub-blocks 2g
// and 2g+1, one vector of unsigned quants): vpmaddubsw with the activations
// (pair sums <= 2*31*127), vpdpwssd with the two sub-block scales; the mins
// through the activation block sums. The two kernels differ only in how
// they rebuild the quants.
//
// `static`: each including kernel file gets its own copy (see avx512_helpers.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/formats/q8_k.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_groups_avx512.h"
#include "core/kernels/q4_k_scales.h"

namespace kvforge {

struct Q4_KScalesAvx512 {
  // int16 lanes m0 m0 m1 m1 ... m7 m7: bsums[2j] and bsums[2j+1] both
  // belong to sub-block j.
  __m256i mins;
  // Group g: int16 lanes 0-15 sc[2g], lanes 16-31 sc[2g+1].
  __m512i scales[4];
};

static inline Q4_KScalesAvx512 q4_k_scales_avx512(const uint8_t* packed_scales) {
  const __m256i min_lanes =
      _mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
  const __m512i pair_lanes = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
  uint32_t packed[4];
  q4_k_unpack_scale_bytes(packed_scales, packed);
  // int16 lanes: sc[0..7], m[0..7].
  const __m256i sc_m = _mm256_cvtepu8_epi16(
      _mm_setr_epi32(int(packed[0]), int(packed[1]), int(packed[2]), int(packed[3])));
  Q4_KScalesAvx512 s;
  s.mins = _mm256_permutexvar_epi16(min_lanes, sc_m);
  for (int g = 0; g < 4; ++g) {
    s.scales[g] =
        _mm512_permutexvar_epi16(_mm512_add_epi16(pair_lanes, _mm512_set1_epi16(short(2 * g))),
                                 _mm512_castsi256_si512(sc_m));
  }
  return s;
}

// The super-block's sums against token block ak, still spread over lanes:
// isum's lanes add up to sum of sc * q * a, msum's to sum of m * bsums.
static inline void q4_k_token_vectors_avx512(const __m512i quants[4], const Q4_KScalesAvx512& s,
                                             const BlockQ8_K& ak, __m512i& isum, __m256i& msum) {
  isum = _mm512_setzero_si512();
  for (int g = 0; g < 4; ++g) {
    const __m512i p = _mm512_maddubs_epi16(quants[g], _mm512_loadu_si512(ak.qs + 64 * g));
    isum = _mm512_dpwssd_epi32(isum, p, s.scales[g]);
  }
  const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ak.bsums));
  msum = _mm256_madd_epi16(bsums, s.mins);
}

// The super-block's sums against token block ak: total = sum of sc * q * a,
// msum = sum of m * bsums.
static inline void q4_k_token_sums_avx512(const __m512i quants[4], const Q4_KScalesAvx512& s,
                                          const BlockQ8_K& ak, int32_t& total, int32_t& msum) {
  __m512i isum;
  __m256i mins;
  q4_k_token_vectors_avx512(quants, s, ak, isum, mins);
  avx512_hsum2_epi32(isum, mins, total, msum);
}

// Folds one super-block (d_dmin = its d | dmin << 16, as stored) into the
// accumulators of tokens a[0 .. NT) as kquant_accumulate folds it, four
// tokens sharing their reductions (avx512_fold_token_groups).
template <int NT>
static inline void q4_k_fold_tokens_avx512(const __m512i quants[4], const Q4_KScalesAvx512& s,
                                           uint32_t d_dmin, const BlockQ8_K* const* a, float* acc) {
  avx512_fold_token_groups<NT, true>(
      d_dmin, acc,
      [&](int k, __m512i& isum, __m256i& msum) {
        q4_k_token_vectors_avx512(quants, s, *a[k], isum, msum);
        return a[k]->d;
      },
      KquantLanesAsSummed{});
}

// Folds one Q4_K or Q5_K super-block `blk` (its rebuilt quants; a[k] + b:
// token k's block) into the tile's accumulators: alone for one token, else
// four tokens at a time (q4_k_fold_tokens_avx512).
template <int NT, class Block>
static inline void q4_k_fold_block_avx512(const __m512i quants[4], const Q4_KScalesAvx512& s,
                                          const Block& blk, const BlockQ8_K* const* a, int64_t b,
                                          float* acc) {
  if constexpr (NT == 1) {
    const float d = avx512_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
    const float dmin = avx512_load_half(reinterpret_cast<const uint8_t*>(&blk.dmin));
    int32_t total = 0, msum = 0;
    q4_k_token_sums_avx512(quants, s, a[0][b], total, msum);
    acc[0] = kquant_accumulate(acc[0], d, dmin, a[0][b].d, total, msum);
  } else {
    const BlockQ8_K* ak[NT];
    for (int k = 0; k < NT; ++k) ak[k] = &a[k][b];
    q4_k_fold_tokens_avx512<NT>(quants, s, uint32_t(blk.d) | uint32_t(blk.dmin) << 16, ak, acc);
  }
}

}  // namespace kvforge
