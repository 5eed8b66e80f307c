// Q6_K weights x Q8_K activations, AVX2. The 6-bit quants (0..63) of 32
// consecutive elements are rebuilt from one ql and one qh vector with shifts
// and masks, multiplied by vpmaddubsw and by the two 16-element sub-block
// scales with vpmaddwd; the -32 offset comes off through the activation
// block sums. Exact integers, so bit-identical to the scalar kernel.
#include <immintrin.h>

#include "core/formats/q6_k.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// int16 lanes 0-7 carry scale s, lanes 8-15 scale s + 1 (the two 16-byte
// halves of a 32-element vpmaddubsw result).
__m256i scale_pair(const int8_t* scales, int s) {
  return _mm256_set_m128i(_mm_set1_epi16(scales[s + 1]), _mm_set1_epi16(scales[s]));
}

struct Q6_KAvx2Dot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const auto* w = weight_row<BlockQ6_K>(task, row);
    const int64_t n_blocks = task.cols / BlockQ6_K::kElems;
    const BlockQ8_K* a[NT];
    q8_k_token_rows<NT>(task, t0, n_blocks, a);
    float acc[NT] = {};
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i bits45 = _mm256_set1_epi8(0x30);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const BlockQ6_K& blk = w[b];
      __m256i isum[NT];
      for (int k = 0; k < NT; ++k) isum[k] = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {
        const auto* ql = reinterpret_cast<const __m256i*>(blk.ql + 64 * h);
        const __m256i ql0 = _mm256_loadu_si256(ql), ql1 = _mm256_loadu_si256(ql + 1);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * h));
        // Elements 32i .. 32i+31 of this half; qh bits 2i, 2i+1 land on bits 4, 5.
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4),
                               _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45));
        q[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                               _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                               _mm256_and_si256(qh, bits45));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                               _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
        for (int i = 0; i < 4; ++i) {
          const __m256i scales = scale_pair(blk.scales, 8 * h + 2 * i);
          for (int k = 0; k < NT; ++k) {
            const auto* aq = reinterpret_cast<const __m256i*>(a[k][b].qs + 128 * h + 32 * i);
            const __m256i p = _mm256_maddubs_epi16(q[i], _mm256_loadu_si256(aq));
            isum[k] = _mm256_add_epi32(isum[k], _mm256_madd_epi16(p, scales));
          }
        }
      }
      const __m256i scales16 =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
      const float d = avx2_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
      for (int k = 0; k < NT; ++k) {
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k][b].bsums));
        int32_t dot = 0, offset = 0;
        avx2_hsum2_epi32(isum[k], _mm256_madd_epi16(bsums, scales16), dot, offset);
        const int32_t total = dot - 32 * offset;
        acc[k] = kquant_accumulate(acc[k], d, 0.0f, a[k][b].d, total, 0);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }
};

}  // namespace

void matmul_rows_q6_k_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Q6_KAvx2Dot{task});
}

}  // namespace kvforge
