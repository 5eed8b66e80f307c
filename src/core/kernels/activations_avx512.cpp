// Activation quantizers, AVX-512. Bit-identical values to activations.cpp
// (same exact max, same f32 operations, vcvtps2dq rounds to nearest even);
// the Q8 quants are stored offset by +128 (q ^ 0x80) for the AVX-512
// kernels' vpdpbusd, see matmul_task.h. Q8_K blocks are stored as defined.
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/matmul_task.h"

namespace kvforge {

void quantize_activations_q8_avx512(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                    int8_t* quants, float* scales) {
  constexpr int kBlock = 32;
  const int64_t n_blocks = cols / kBlock;
  const __m256i offset = _mm256_set1_epi8(char(0x80));
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      const float* xs = x + t * cols + b * kBlock;
      int8_t* q = quants + t * cols + b * kBlock;
      const __m512 v0 = _mm512_loadu_ps(xs), v1 = _mm512_loadu_ps(xs + 16);
      const float amax = avx512_hmax(_mm512_max_ps(avx512_abs(v0), avx512_abs(v1)));
      if (amax < 1e-30f) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), offset);  // q = 0, offset
        scales[t * n_blocks + b] = 0.0f;
        continue;
      }
      const __m512 id = _mm512_set1_ps(127.0f / amax);
      scales[t * n_blocks + b] = amax / 127.0f;
      const __m128i q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id)));
      const __m128i q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id)));
      const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_xor_si256(both, offset));
    }
  }
}

void quantize_activations_q8_k_avx512(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                      BlockQ8_K* blocks) {
  constexpr int kVecs = BlockQ8_K::kElems / 16;  // one vector per 16-value sum
  const int64_t n_blocks = cols / BlockQ8_K::kElems;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      const float* xs = x + t * cols + b * BlockQ8_K::kElems;
      BlockQ8_K& out = blocks[t * n_blocks + b];
      __m512 m = _mm512_setzero_ps();
      for (int i = 0; i < kVecs; ++i)
        m = _mm512_max_ps(m, avx512_abs(_mm512_loadu_ps(xs + 16 * i)));
      const float amax = avx512_hmax(m);
      if (amax < 1e-30f) {
        std::memset(&out, 0, sizeof(out));
        continue;
      }
      const float iscale = 127.0f / amax;
      const __m512 vscale = _mm512_set1_ps(iscale);
      for (int i = 0; i < kVecs; ++i) {
        const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xs + 16 * i), vscale));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out.qs + 16 * i), _mm512_cvtsepi32_epi8(q));
        out.bsums[i] = int16_t(avx512_hsum_epi32(q));
      }
      out.d = 1.0f / iscale;
    }
  }
}

}  // namespace kvforge
