// Small AVX2 building blocks for the *_avx2.cpp kernel files only.
// `static inline` gives every including file its own private copy, so these
// AVX2-compiled functions can never be linked into baseline code paths.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace kvforge {

static inline float avx2_hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline int32_t avx2_hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 1, 1, 1)));
  return _mm_cvtsi128_si32(s);
}

// Horizontal sums of two integer vectors at once (they share the shuffles).
static inline void avx2_hsum2_epi32(__m256i a, __m256i b, int32_t& sum_a, int32_t& sum_b) {
  const __m256i h = _mm256_hadd_epi32(a, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  s = _mm_hadd_epi32(s, s);  // a b a b
  sum_a = _mm_cvtsi128_si32(s);
  sum_b = _mm_extract_epi32(s, 1);
}

static inline float avx2_hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

static inline __m256 avx2_abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// An IEEE half stored (unaligned) at p, as f32.
static inline float avx2_load_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// 32 int32 lanes (a, b, c, d: elements 0-7, 8-15, 16-23, 24-31) to 32 int8 in
// element order, saturating.
static inline __m256i avx2_pack_i32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);  // per 128-bit lane: a0-3 b0-3 | a4-7 b4-7
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i abcd = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Exact sum of the products of 32 signed bytes w and a, as 8 int32 partial
// sums. Requires a != -128 (activation quants are in [-127, 127]): the sign
// trick turns w*a into |w| * (a with w's sign), the unsigned x signed form
// vpmaddubsw multiplies, and |w| <= 128 keeps pair sums <= 2*128*127 < 2^15.
static inline __m256i avx2_dot_i8(__m256i w, __m256i a) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

}  // namespace kvforge
