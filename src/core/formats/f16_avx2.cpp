// f16 rows with the F16C instructions (part of the AVX2 level, cpu_features.h),
// 8 values per instruction; the last n % 8 through a zero-padded copy. These
// give the same bits as the scalar functions in f16.h (tests/core/formats/formats_f16_test.cpp).
#include <immintrin.h>
#include <string.h>

#include "core/formats/f16.h"

namespace kvforge {

void quantize_row_f16_avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  if (i < n) {
    alignas(32) float f[8] = {};
    alignas(16) uint16_t h[8];
    memcpy(f, src + i, size_t(n - i) * sizeof(float));
    _mm_store_si128(reinterpret_cast<__m128i*>(h),
                    _mm256_cvtps_ph(_mm256_load_ps(f), _MM_FROUND_TO_NEAREST_INT));
    memcpy(dst + i, h, size_t(n - i) * sizeof(uint16_t));
  }
}

void dequantize_row_f16_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  if (i < n) {
    alignas(16) uint16_t h[8] = {};
    alignas(32) float f[8];
    memcpy(h, src + i, size_t(n - i) * sizeof(uint16_t));
    _mm256_store_ps(f, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h))));
    memcpy(dst + i, f, size_t(n - i) * sizeof(float));
  }
}

}  // namespace kvforge
