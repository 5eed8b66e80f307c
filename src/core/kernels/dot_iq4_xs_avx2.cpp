// IQ4_XS weights x Q8_K activations, AVX2. Per 32-value sub-block: its 16
// index bytes go to both 128-bit lanes, the upper lane shifted by 4, so that
// masking leaves elements 0-15 (low nibbles) and 16-31 (high nibbles) in
// element order; vpshufb looks the levels up in the codebook; the sign trick
// turns the signed x signed products into the unsigned x signed form of
// vpmaddubsw (|level| <= 127, pair sums <= 2*127*127), and vpmaddwd applies
// the sub-block factor ls - 32. The super-block's integers are exact, so
// results match the scalar kernel bit for bit (see kquant_accumulate.h).
#include <immintrin.h>

#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_xs.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/iq4_xs_scales.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

struct IQ4_XSAvx2Dot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const auto* w =
        reinterpret_cast<const BlockIQ4_XS*>(task.weights + row * int64_t(task.row_bytes));
    const int64_t n_blocks = task.cols / BlockIQ4_XS::kElems;
    const BlockQ8_K* a[NT];
    float acc[NT];
    for (int k = 0; k < NT; ++k) {
      a[k] = task.act_k + (t0 + k) * n_blocks;
      acc[k] = 0.0f;
    }
    const __m256i codebook = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Codebook)));
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i high_lane_shift = _mm256_setr_epi64x(0, 0, 4, 4);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const BlockIQ4_XS& blk = w[b];
      const __m128i ls =
          _mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(iq4_xs_unpack_scale_bytes(blk))));
      const __m128i factors = _mm_sub_epi16(ls, _mm_set1_epi16(32));
      // Each 32-bit lane j holds factor j in both 16-bit halves, ready to broadcast.
      const __m256i f32 = _mm256_cvtepu16_epi32(factors);
      const __m256i factor_pairs = _mm256_or_si256(f32, _mm256_slli_epi32(f32, 16));
      __m256i isum[NT];
      for (int k = 0; k < NT; ++k) isum[k] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i raw = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs + 16 * j)));
        const __m256i idx = _mm256_and_si256(_mm256_srlv_epi64(raw, high_lane_shift), low4);
        const __m256i levels = _mm256_shuffle_epi8(codebook, idx);
        const __m256i magnitudes = _mm256_sign_epi8(levels, levels);
        const __m256i factor = _mm256_permutevar8x32_epi32(factor_pairs, _mm256_set1_epi32(j));
        for (int k = 0; k < NT; ++k) {
          const __m256i aq =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k][b].qs + 32 * j));
          const __m256i p = _mm256_maddubs_epi16(magnitudes, _mm256_sign_epi8(aq, levels));
          isum[k] = _mm256_add_epi32(isum[k], _mm256_madd_epi16(p, factor));
        }
      }
      const float d = avx2_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
      for (int k = 0; k < NT; ++k) {
        acc[k] = kquant_accumulate_scaled(acc[k], d, a[k][b].d, avx2_hsum_epi32(isum[k]));
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }
};

}  // namespace

void matmul_rows_iq4_xs_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, IQ4_XSAvx2Dot{task});
}

}  // namespace kvforge
