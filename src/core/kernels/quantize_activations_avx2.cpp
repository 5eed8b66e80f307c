// Activation quantizers, AVX2. Bit-identical to activations.cpp: the same
// exact max, the same f32 divisions and products, and vcvtps2dq rounds to
// nearest even like lrintf in the default rounding mode.
#include <immintrin.h>

#include <cstring>

#include "core/kernels/avx2_helpers.h"
#include "core/kernels/matmul_task.h"

namespace kvforge {

namespace {

// One block of 32 values: quants to q, returns f16(amax/127) widened, and in
// `sum_scaled` f16(amax/127 * sum of the quants) (q8_1's s).
inline float quantize_block32(const float* xs, int8_t* q, float& sum_scaled) {
  __m256 v[4];
  for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xs + 8 * i);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(avx2_abs(v[0]), avx2_abs(v[1])),
                                 _mm256_max_ps(avx2_abs(v[2]), avx2_abs(v[3])));
  const float amax = avx2_hmax(m);
  if (amax < 1e-30f) {
    std::memset(q, 0, 32);
    sum_scaled = 0.0f;
    return 0.0f;
  }
  const __m256 id = _mm256_set1_ps(127.0f / amax);
  const float d = amax / 127.0f;
  __m256i iq[4];
  for (int i = 0; i < 4; ++i) iq[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q),
                      avx2_pack_i32_to_i8(iq[0], iq[1], iq[2], iq[3]));
  const int32_t sum = avx2_hsum_epi32(
      _mm256_add_epi32(_mm256_add_epi32(iq[0], iq[1]), _mm256_add_epi32(iq[2], iq[3])));
  sum_scaled = _cvtsh_ss(_cvtss_sh(d * float(sum), 0));
  return _cvtsh_ss(_cvtss_sh(d, 0));
}

}  // namespace

void quantize_activations_q8_avx2(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                  int8_t* quants, float* scales, int32_t* /*sums: AVX-512 only*/) {
  constexpr int kBlock = 32;
  const int64_t n_blocks = cols / kBlock;
  float unused;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      scales[t * n_blocks + b] =
          quantize_block32(x + t * cols + b * kBlock, quants + t * cols + b * kBlock, unused);
    }
  }
}

void quantize_activations_q8_blocks_avx2(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                         int8_t* quants, float* scales, float* block_sums) {
  constexpr int kBlock = 32;
  const int64_t n_blocks = cols / kBlock;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      scales[t * n_blocks + b] = quantize_block32(
          x + t * cols + b * kBlock, quants + t * cols + b * kBlock, block_sums[t * n_blocks + b]);
    }
  }
}

void quantize_activations_q8_k_avx2(const float* x, int64_t cols, int64_t t0, int64_t t1,
                                    BlockQ8_K* blocks) {
  constexpr int kVecs = BlockQ8_K::kElems / 8;
  const int64_t n_blocks = cols / BlockQ8_K::kElems;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      const float* xs = x + t * cols + b * BlockQ8_K::kElems;
      BlockQ8_K& out = blocks[t * n_blocks + b];
      __m256 m = _mm256_setzero_ps();
      for (int i = 0; i < kVecs; ++i) m = _mm256_max_ps(m, avx2_abs(_mm256_loadu_ps(xs + 8 * i)));
      const float amax = avx2_hmax(m);
      if (amax < 1e-30f) {
        std::memset(&out, 0, sizeof(out));
        continue;
      }
      // The first element of largest magnitude, with its sign (formats/q8_k.h).
      const __m256 vamax = _mm256_set1_ps(amax);
      float max = amax;
      for (int i = 0; i < kVecs; ++i) {
        const __m256 v = _mm256_loadu_ps(xs + 8 * i);
        const int hit = _mm256_movemask_ps(_mm256_cmp_ps(avx2_abs(v), vamax, _CMP_EQ_OQ));
        if (hit) {
          max = xs[8 * i + __builtin_ctz(unsigned(hit))];
          break;
        }
      }
      const float iscale = -127.0f / max;
      const __m256 vscale = _mm256_set1_ps(iscale);
      for (int g = 0; g < kVecs / 4; ++g) {  // 32 values per step: two 16-value sums
        __m256i iq[4];
        for (int i = 0; i < 4; ++i) {
          iq[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xs + 32 * g + 8 * i), vscale));
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs + 32 * g),
                            avx2_pack_i32_to_i8(iq[0], iq[1], iq[2], iq[3]));
        out.bsums[2 * g] = int16_t(avx2_hsum_epi32(_mm256_add_epi32(iq[0], iq[1])));
        out.bsums[2 * g + 1] = int16_t(avx2_hsum_epi32(_mm256_add_epi32(iq[2], iq[3])));
      }
      out.d = 1.0f / iscale;
    }
  }
}

}  // namespace kvforge
