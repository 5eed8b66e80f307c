// IQ4_XS weights x Q8_K activations, AVX-512 (BW + VNNI). The 128 index
// bytes are split into nibbles and regrouped (one two-source permute per 64
// values) so that each vector holds two sub-blocks in element order; vpshufb
// looks up the levels' magnitudes (<= 127) and the index's top bit says
// which are negative (levels 0-7 of the codebook are). Per token the
// activations of the negative levels are negated (|a| <= 127, so exactly),
// vpmaddubsw multiplies the unsigned magnitudes by them (pair sums <=
// 2*127*127) and vpdpwssd applies the two sub-block factors ls - 32. The
// super-block's integers are exact, so results match the scalar kernel bit
// for bit (see kquant_accumulate.h).
#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_xs.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/iq4_xs_scales.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// |kIq4Codebook[k]|; the levels of indices 0-7 are negative, of 8-15 positive.
alignas(16) constexpr int8_t kMagnitudes[16] = {127, 104, 83, 65, 49, 35, 22, 10,
                                                1,   13,  25, 38, 53, 69, 89, 113};
static_assert(kIq4Codebook[7] < 0 && kIq4Codebook[8] > 0, "sign split at index 8");

struct IQ4_XSAvx512Dot {
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
    const __m512i magnitude_table =
        _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kMagnitudes)));
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i sign_bit = _mm512_set1_epi8(0x08);
    // 64-bit lanes of [low nibbles | high nibbles] of 4 sub-blocks (16 bytes
    // each) to [sub-block s low, s high, s+1 low, s+1 high] for s = 0 and 2.
    const __m512i first_pair = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    const __m512i second_pair = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    const __m512i pair_lanes = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const BlockIQ4_XS& blk = w[b];
      const __m128i ls =
          _mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(iq4_xs_unpack_scale_bytes(blk))));
      const __m512i factors = _mm512_castsi128_si512(_mm_sub_epi16(ls, _mm_set1_epi16(32)));
      __m512i magnitudes[4], factor_lanes[4];
      __mmask64 negative[4];
      for (int h = 0; h < 2; ++h) {
        const __m512i raw = _mm512_loadu_si512(blk.qs + 64 * h);
        const __m512i lo = _mm512_and_si512(raw, low4);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
        const __m512i idx[2] = {_mm512_permutex2var_epi64(lo, first_pair, hi),
                                _mm512_permutex2var_epi64(lo, second_pair, hi)};
        for (int i = 0; i < 2; ++i) {
          magnitudes[2 * h + i] = _mm512_shuffle_epi8(magnitude_table, idx[i]);
          negative[2 * h + i] = _mm512_testn_epi8_mask(idx[i], sign_bit);
        }
      }
      for (int p = 0; p < 4; ++p) {
        // int16 lanes 0-15: factor of sub-block 2p, lanes 16-31: of 2p+1.
        factor_lanes[p] = _mm512_permutexvar_epi16(
            _mm512_add_epi16(pair_lanes, _mm512_set1_epi16(short(2 * p))), factors);
      }
      const float d = avx512_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
      for (int k = 0; k < NT; ++k) {
        const BlockQ8_K& ak = a[k][b];
        __m512i isum = _mm512_setzero_si512();
        for (int p = 0; p < 4; ++p) {
          const __m512i aq = _mm512_loadu_si512(ak.qs + 64 * p);
          const __m512i signed_aq =
              _mm512_mask_sub_epi8(aq, negative[p], _mm512_setzero_si512(), aq);
          const __m512i prod = _mm512_maddubs_epi16(magnitudes[p], signed_aq);
          isum = _mm512_dpwssd_epi32(isum, prod, factor_lanes[p]);
        }
        acc[k] = kquant_accumulate_scaled(acc[k], d, ak.d, avx512_hsum_epi32(isum));
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }
};

}  // namespace

void matmul_rows_iq4_xs_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<8>(task, r0, r1, IQ4_XSAvx512Dot{task});
}

}  // namespace kvforge
