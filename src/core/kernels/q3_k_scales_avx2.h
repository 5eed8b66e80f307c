// A Q3_K block's 16 stored 6-bit scales sc[j] (layout in formats/q3_k.h) as
// the 16 bytes of a vector, unpacked in SIMD registers: for the *_avx2.cpp
// and *_avx512.cpp kernels, where the word-wise scalar unpacking
// (q3_k_scales.h) and moving its result into a vector cost a large part of
// a super-block's time.
//
// `static`: each including file gets its own copy (see avx2_helpers.h).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "core/formats/q3_k.h"

namespace kvforge {

static inline __m128i q3_k_scales_avx2(const BlockQ3_K& blk) {
  // One 16-byte load ending with the 12 scale bytes: its first 4 bytes are
  // the end of qs, inside the block, so nothing is read past it.
  static_assert(offsetof(BlockQ3_K, scales) >= 4, "the load starts 4 bytes before the scales");
  const uint8_t* start = reinterpret_cast<const uint8_t*>(&blk) + offsetof(BlockQ3_K, scales) - 4;
  const __m128i raw =
      _mm_srli_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(start)), 4);  // bytes 0-11
  const __m128i low4 = _mm_set1_epi8(0x0f);
  // Low nibbles of bytes 0-7 are low4(sc[0..7]), their high nibbles low4(sc[8..15]).
  const __m128i low = _mm_and_si128(_mm_unpacklo_epi64(raw, _mm_srli_epi16(raw, 4)), low4);
  // Bytes 8-11 in each 32-bit lane g, shifted by 2g: bit pair g of byte
  // 8 + j % 4 is the top of sc[j], j = 4g + j % 4.
  const __m128i top =
      _mm_shuffle_epi8(raw, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
  const __m128i top2 =
      _mm_and_si128(_mm_srlv_epi32(top, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
  return _mm_or_si128(low, _mm_slli_epi16(top2, 4));
}

}  // namespace kvforge
