// Activation quantizers, AVX-512. Bit-identical values to activations.cpp
// (same exact max, same f32 operations, vcvtps2dq rounds to nearest even);
// the Q8 activations are stored in the AVX-512 quad layout with lane sums
// (see matmul_task.h). Q8_K blocks are stored as defined.
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/matmul_task.h"

namespace kvforge {

void quantize_activations_q8_avx512(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                    int8_t* quants, float* scales, int32_t* sums) {
  constexpr int kBlock = 32;
  const int64_t n_blocks = cols / kBlock;
  const int64_t quads = (n_blocks + 3) / 4;
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t quad = 0; quad < quads; ++quad) {
      int8_t* q = quants + (t * quads + quad) * kQ8QuadBytes;
      float* d = scales + (t * quads + quad) * kQ8QuadLanes;
      for (int i = 0; i < 4; ++i) {
        // Block i of the quad: elements 0..15 at q + 16i, 16..31 at q + 64 + 16i.
        const int64_t b = 4 * quad + i;
        __m128i q0 = _mm_setzero_si128(), q1 = _mm_setzero_si128();
        float scale = 0.0f;
        if (b < n_blocks) {
          const float* xs = x + t * cols + b * kBlock;
          const __m512 v0 = _mm512_loadu_ps(xs), v1 = _mm512_loadu_ps(xs + 16);
          const float amax = avx512_hmax(_mm512_max_ps(avx512_abs(v0), avx512_abs(v1)));
          if (amax >= 1e-30f) {
            const __m512 id = _mm512_set1_ps(127.0f / amax);
            scale = _cvtsh_ss(_cvtss_sh(amax / 127.0f, 0));
            q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id)));
            q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id)));
          }
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * i), q0);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 64 + 16 * i), q1);
        _mm_storeu_ps(d + 4 * i, _mm_set1_ps(scale));
      }
      // Per lane, the sum of the 8 quants vpdpbusd adds into it (4 per half).
      const __m512i lo = _mm512_loadu_si512(q), hi = _mm512_loadu_si512(q + 64);
      const __m512i s =
          _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, lo), ones, hi);
      _mm512_storeu_si512(sums + (t * quads + quad) * kQ8QuadLanes, s);
    }
  }
}

// The plain layout, as at the AVX2 level (the same instructions give the same bits).
void quantize_activations_q8_blocks_avx512(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                           int8_t* quants, float* scales, float* block_sums) {
  quantize_activations_q8_blocks_avx2(x, cols, t0, t1, quants, scales, block_sums);
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
      // The first element of largest magnitude, with its sign (formats/q8_k.h).
      const __m512 vamax = _mm512_set1_ps(amax);
      float max = amax;
      for (int i = 0; i < kVecs; ++i) {
        const __mmask16 hit =
            _mm512_cmp_ps_mask(avx512_abs(_mm512_loadu_ps(xs + 16 * i)), vamax, _CMP_EQ_OQ);
        if (hit) {
          max = xs[16 * i + __builtin_ctz(unsigned(hit))];
          break;
        }
      }
      const float iscale = -127.0f / max;
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
