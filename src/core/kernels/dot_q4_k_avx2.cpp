// Q4_K weights x Q8_K activations, AVX2. Per 32-value sub-block: vpmaddubsw
// (unsigned nibbles x signed activations, pair sums <= 2*15*127) then
// vpmaddwd with the sub-block scale; the mins use the activation block sums.
// The super-block's integers are exact, so results match the scalar kernel
// bit for bit (see kquant_accumulate.h).
#include <immintrin.h>

#include "core/formats/q4_k.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/q4_k_scales.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

struct Q4_KAvx2Dot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const auto* w =
        reinterpret_cast<const BlockQ4_K*>(task.weights + row * int64_t(task.row_bytes));
    const int64_t n_blocks = task.cols / BlockQ4_K::kElems;
    const BlockQ8_K* a[NT];
    float acc[NT];
    for (int k = 0; k < NT; ++k) {
      a[k] = task.act_k + (t0 + k) * n_blocks;
      acc[k] = 0.0f;
    }
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const BlockQ4_K& blk = w[b];
      uint32_t packed[4];
      q4_k_unpack_scale_bytes(blk.scales, packed);
      const __m128i sc_m =
          _mm_setr_epi32(int(packed[0]), int(packed[1]), int(packed[2]), int(packed[3]));
      // Each 32-bit lane j holds sc[j] in both 16-bit halves, ready to broadcast.
      const __m256i sc32 = _mm256_cvtepu8_epi32(sc_m);
      const __m256i sc_pairs = _mm256_or_si256(sc32, _mm256_slli_epi32(sc32, 16));
      // bsums[2j] and bsums[2j+1] both belong to sub-block j: lanes m0 m0 m1 m1 ... m7 m7.
      const __m128i m_bytes = _mm_unpackhi_epi64(sc_m, sc_m);
      const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m_bytes, m_bytes));
      __m256i isum[NT];
      for (int k = 0; k < NT; ++k) isum[k] = _mm256_setzero_si256();
      for (int g = 0; g < 4; ++g) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * g));
        const __m256i lo = _mm256_and_si256(q, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        const __m256i sc_lo = _mm256_permutevar8x32_epi32(sc_pairs, _mm256_set1_epi32(2 * g));
        const __m256i sc_hi = _mm256_permutevar8x32_epi32(sc_pairs, _mm256_set1_epi32(2 * g + 1));
        for (int k = 0; k < NT; ++k) {
          const int8_t* aq = a[k][b].qs + 64 * g;
          const __m256i a_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq));
          const __m256i a_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq + 32));
          const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, a_lo), sc_lo);
          const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, a_hi), sc_hi);
          isum[k] = _mm256_add_epi32(isum[k], _mm256_add_epi32(p_lo, p_hi));
        }
      }
      const float d = avx2_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
      const float dmin = avx2_load_half(reinterpret_cast<const uint8_t*>(&blk.dmin));
      for (int k = 0; k < NT; ++k) {
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k][b].bsums));
        int32_t total = 0, msum = 0;
        avx2_hsum2_epi32(isum[k], _mm256_madd_epi16(bsums, mins), total, msum);
        acc[k] = kquant_accumulate(acc[k], d, dmin, a[k][b].d, total, msum);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }
};

}  // namespace

void matmul_rows_q4_k_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Q4_KAvx2Dot{task});
}

}  // namespace kvforge
