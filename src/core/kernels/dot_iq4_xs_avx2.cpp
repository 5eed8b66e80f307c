// IQ4_XS weights x Q8_K activations, AVX2. vpshufb looks the levels up in
// the codebook from the 4-bit indices; the sign trick turns the signed x
// signed products into the unsigned x signed form of vpmaddubsw (|level| <=
// 127, pair sums <= 2*127*127), and vpmaddwd applies the sub-block factor
// ls - 32. The super-block's integers are exact, so results match the
// scalar kernel bit for bit (see kquant_accumulate.h).
//
// A sub-block's 16 index bytes hold its elements 0-15 (low nibbles) and
// 16-31 (high nibbles). Up to two tokens, 32 index bytes (two sub-blocks,
// one per 128-bit lane) are split as loaded, and the activations are
// loaded to match, 16 bytes per lane. Larger batches put one sub-block's
// bytes in both lanes and shift the upper one by 4, once for all tokens.
#include <immintrin.h>

#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_xs.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/iq4_xs_scales.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// Each 32-bit lane j holds factor ls[j] - 32 in both 16-bit halves.
__m256i factor_pairs(const BlockIQ4_XS& blk) {
  const __m128i ls = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(iq4_xs_unpack_scale_bytes(blk))));
  const __m256i f32 = _mm256_cvtepu16_epi32(_mm_sub_epi16(ls, _mm_set1_epi16(32)));
  return _mm256_or_si256(f32, _mm256_slli_epi32(f32, 16));
}

struct IQ4_XSAvx2Dot {
  const MatmulTask& task;

  // lo, hi: elements 0-15 / 16-31 of sub-blocks 2p (lane 0) and 2p+1 (lane 1).
  template <int NT>
  void few_tokens(const BlockIQ4_XS* w, const BlockQ8_K* const* a, int64_t n_blocks,
                  float* out) const {
    const __m256i codebook = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Codebook)));
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    float acc[NT] = {};
    for (int64_t b = 0; b < n_blocks; ++b) {
      const BlockIQ4_XS& blk = w[b];
      const __m256i pairs = factor_pairs(blk);
      __m256i isum[NT];
      for (int k = 0; k < NT; ++k) isum[k] = _mm256_setzero_si256();
      for (int p = 0; p < 4; ++p) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * p));
        const __m256i lo = _mm256_shuffle_epi8(codebook, _mm256_and_si256(q, low4));
        const __m256i hi =
            _mm256_shuffle_epi8(codebook, _mm256_and_si256(_mm256_srli_epi16(q, 4), low4));
        const __m256i lo_abs = _mm256_sign_epi8(lo, lo), hi_abs = _mm256_sign_epi8(hi, hi);
        const __m256i factor = _mm256_permutevar8x32_epi32(
            pairs, _mm256_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                     2 * p + 1));
        for (int k = 0; k < NT; ++k) {
          const auto* aq = reinterpret_cast<const __m128i*>(a[k][b].qs + 64 * p);
          const __m256i a_lo = _mm256_loadu2_m128i(aq + 2, aq);
          const __m256i a_hi = _mm256_loadu2_m128i(aq + 3, aq + 1);
          const __m256i p_lo = _mm256_maddubs_epi16(lo_abs, _mm256_sign_epi8(a_lo, lo));
          const __m256i p_hi = _mm256_maddubs_epi16(hi_abs, _mm256_sign_epi8(a_hi, hi));
          isum[k] = _mm256_add_epi32(isum[k], _mm256_add_epi32(_mm256_madd_epi16(p_lo, factor),
                                                               _mm256_madd_epi16(p_hi, factor)));
        }
      }
      const float d = avx2_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
      for (int k = 0; k < NT; ++k) {
        acc[k] = kquant_accumulate_scaled(acc[k], d, a[k][b].d, avx2_hsum_epi32(isum[k]));
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }

  // levels: sub-block j's 32 elements in order.
  template <int NT>
  void many_tokens(const BlockIQ4_XS* w, const BlockQ8_K* const* a, int64_t n_blocks,
                   float* out) const {
    const __m256i codebook = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Codebook)));
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i high_lane_shift = _mm256_setr_epi64x(0, 0, 4, 4);
    float acc[NT] = {};
    for (int64_t b = 0; b < n_blocks; ++b) {
      const BlockIQ4_XS& blk = w[b];
      const __m256i pairs = factor_pairs(blk);
      __m256i isum[NT];
      for (int k = 0; k < NT; ++k) isum[k] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i raw = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs + 16 * j)));
        const __m256i idx = _mm256_and_si256(_mm256_srlv_epi64(raw, high_lane_shift), low4);
        const __m256i levels = _mm256_shuffle_epi8(codebook, idx);
        const __m256i magnitudes = _mm256_sign_epi8(levels, levels);
        const __m256i factor = _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(j));
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

  // The same integers in the same fold either way, so the choice cannot
  // change a result.
  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const auto* w = weight_row<BlockIQ4_XS>(task, row);
    const int64_t n_blocks = task.cols / BlockIQ4_XS::kElems;
    const BlockQ8_K* a[NT];
    q8_k_token_rows<NT>(task, t0, n_blocks, a);
    if constexpr (NT <= 2) {
      few_tokens<NT>(w, a, n_blocks, out);
    } else {
      many_tokens<NT>(w, a, n_blocks, out);
    }
  }
};

}  // namespace

void matmul_rows_iq4_xs_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, IQ4_XSAvx2Dot{task});
}

}  // namespace kvforge
