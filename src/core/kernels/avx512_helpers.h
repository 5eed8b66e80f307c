// Small AVX-512 building blocks for the *_avx512.cpp kernel files only.
// `static inline` gives every including file its own private copy, so these
// AVX-512-compiled functions can never be linked into other code paths.
#pragma once

// GCC 12's AVX-512 headers trip -Wuninitialized inside their own
// _mm256_undefined_* helpers when extract intrinsics are inlined (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace kvforge {

static inline float avx512_hsum(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float avx512_hmax(__m512 v) {
  const __m256 m8 = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

static inline int32_t avx512_hsum_epi32(__m512i v) {
  const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti32x8_epi32(v, 1));
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 1, 1, 1)));
  return _mm_cvtsi128_si32(s);
}

// Horizontal sums of two integer vectors at once (they share the shuffles).
static inline void avx512_hsum2_epi32(__m512i a, __m256i b, int32_t& sum_a, int32_t& sum_b) {
  const __m256i a8 = _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti32x8_epi32(a, 1));
  const __m256i h = _mm256_hadd_epi32(a8, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  s = _mm_hadd_epi32(s, s);  // a b a b
  sum_a = _mm_cvtsi128_si32(s);
  sum_b = _mm_extract_epi32(s, 1);
}

// e8m0_half (core/formats/mxfp4.h) of 16 E8M0 bytes in int32 lanes: 2^(e - 128)
// as f32 bits, (e - 1) << 23, or for e < 2 the subnormal 0x00200000 << e.
static inline __m512 avx512_e8m0_half(__m512i e) {
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
  const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
  const __mmask16 small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, subnormal));
}

static inline __m512 avx512_abs(__m512 v) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}

static inline uint16_t avx512_load_u16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

static inline float avx512_load_half(const uint8_t* p) { return _cvtsh_ss(avx512_load_u16(p)); }

// Two halves (at p0 and p1) as f32 lanes [h0 x 8, h1 x 8]. Broadcasts and a
// blend instead of a cross-lane permute: shuffles are the scarce resource on
// the weight path of these kernels (measured on Zen 4).
static inline __m512 avx512_half_pair_lanes(const uint8_t* p0, const uint8_t* p1) {
  const __m256i h0 = _mm256_set1_epi16(short(avx512_load_u16(p0)));
  const __m256i h1 = _mm256_set1_epi16(short(avx512_load_u16(p1)));
  return _mm512_cvtph_ps(_mm256_mask_blend_epi16(0xff00, h0, h1));
}

// Two consecutive f32 at p as lanes [p[0] x 8, p[1] x 8]. One load and one
// permute: on the per-token path this beats two broadcasts and a blend.
static inline __m512 avx512_float_pair_lanes(const float* p) {
  const __m128 two = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m512i pick = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  return _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(two));
}

}  // namespace kvforge
