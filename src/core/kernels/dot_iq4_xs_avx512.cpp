// IQ4_XS weights x Q8_K activations, AVX-512 (BW + VNNI). vpshufb looks up
// the levels' magnitudes (<= 127) from the 4-bit indices, and the index's
// top bit says which are negative (levels 0-7 of the codebook are). Per
// token the activations of the negative levels are negated under that byte
// mask (|a| <= 127, so exactly), vpmaddubsw multiplies the unsigned
// magnitudes by them (pair sums <= 2*127*127) and vpdpwssd applies the
// sub-block factors ls - 32. The super-block's integers are exact, so
// results match the scalar kernel bit for bit (see kquant_accumulate.h).
//
// A sub-block's 16 index bytes hold its elements 0-15 (low nibbles) and
// 16-31 (high nibbles), so nibble vectors as loaded pair sub-block halves
// that lie 16 elements apart; one side has to be regrouped, by one
// two-source permute per 64 values. Decode (one token) regroups the
// activations: the masked nibbles then serve directly and one factor vector
// covers 4 sub-blocks. Batches regroup the weights, once for all tokens.
#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_xs.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/iq4_xs_scales.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_groups_avx512.h"
#include "core/kernels/kquant_panels_avx512.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// |kIq4Codebook[k]|; the levels of indices 0-7 are negative, of 8-15 positive.
alignas(16) constexpr int8_t kMagnitudes[16] = {127, 104, 83, 65, 49, 35, 22, 10,
                                                1,   13,  25, 38, 53, 69, 89, 113};
static_assert(kIq4Codebook[7] < 0 && kIq4Codebook[8] > 0, "sign split at index 8");

// The 8 sub-block factors ls - 32 as int16 lanes 0-7.
__m512i block_factors(const BlockIQ4_XS& blk) {
  const __m128i ls = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(iq4_xs_unpack_scale_bytes(blk))));
  return _mm512_castsi128_si512(_mm_sub_epi16(ls, _mm_set1_epi16(32)));
}

struct IQ4_XSAvx512Dot {
  const MatmulTask& task;

  // Block blk's exact dot product with token block a, spread over 16 lanes.
  // Per half h (elements 128h .. 128h+127), lo = the low nibbles of
  // qs[64h .. 64h+63] are elements 0-15 of sub-blocks 4h .. 4h+3 (one per
  // 128-bit lane) and hi their elements 16-31; the activations are regrouped
  // the same way.
  [[gnu::always_inline]] static __m512i block_dot(const BlockIQ4_XS& blk, const BlockQ8_K& a) {
    const __m512i magnitude_table =
        _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kMagnitudes)));
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i sign_bit = _mm512_set1_epi8(0x08);
    // 64-bit lanes of two 64-byte activation vectors: bytes 0-15 of each 32.
    const __m512i first_halves = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13);
    const __m512i second_halves = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
    // int16 lanes 8i .. 8i+7 (128-bit lane i) take factor i.
    const __m512i lane_of_quarter =
        _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0,
                         0, 0, 0, 0, 0, 0, 0);
    const __m512i factors = block_factors(blk);
    __m512i isum = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m512i raw = _mm512_loadu_si512(blk.qs + 64 * h);
      const __m512i lo = _mm512_and_si512(raw, low4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
      const __m512i factor_lanes = _mm512_permutexvar_epi16(
          _mm512_add_epi16(lane_of_quarter, _mm512_set1_epi16(short(4 * h))), factors);
      const __m512i a0 = _mm512_loadu_si512(a.qs + 128 * h);
      const __m512i a1 = _mm512_loadu_si512(a.qs + 128 * h + 64);
      __m512i a_lo = _mm512_permutex2var_epi64(a0, first_halves, a1);
      __m512i a_hi = _mm512_permutex2var_epi64(a0, second_halves, a1);
      a_lo = _mm512_mask_sub_epi8(a_lo, _mm512_testn_epi8_mask(lo, sign_bit),
                                  _mm512_setzero_si512(), a_lo);
      a_hi = _mm512_mask_sub_epi8(a_hi, _mm512_testn_epi8_mask(hi, sign_bit),
                                  _mm512_setzero_si512(), a_hi);
      isum = _mm512_dpwssd_epi32(
          isum, _mm512_maddubs_epi16(_mm512_shuffle_epi8(magnitude_table, lo), a_lo), factor_lanes);
      isum = _mm512_dpwssd_epi32(
          isum, _mm512_maddubs_epi16(_mm512_shuffle_epi8(magnitude_table, hi), a_hi), factor_lanes);
    }
    return isum;
  }

  // One token's row. Kept out of line: inlined into the tile dispatch, it
  // runs short of general registers for the scale unpacking's masks.
  [[gnu::noinline]] float decode_row(const BlockIQ4_XS* w, const BlockQ8_K* a,
                                     int64_t n_blocks) const {
    auto block_d = [&](int64_t b) {
      return avx512_load_half(reinterpret_cast<const uint8_t*>(&w[b].d));
    };
    // Blocks in pairs, so that one horizontal reduction serves two; each
    // block's sum is still folded on its own, in block order.
    float acc = 0.0f;
    int64_t b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
      const __m512i first = block_dot(w[b], a[b]), second = block_dot(w[b + 1], a[b + 1]);
      int32_t sum_first = 0, sum_second = 0;
      avx512_hsum2_epi32(
          first,
          _mm256_add_epi32(_mm512_castsi512_si256(second), _mm512_extracti32x8_epi32(second, 1)),
          sum_first, sum_second);
      acc = kquant_accumulate_scaled(acc, block_d(b), a[b].d, sum_first);
      acc = kquant_accumulate_scaled(acc, block_d(b + 1), a[b + 1].d, sum_second);
    }
    if (b < n_blocks) {
      acc = kquant_accumulate_scaled(acc, block_d(b), a[b].d,
                                     avx512_hsum_epi32(block_dot(w[b], a[b])));
    }
    return acc;
  }

  // NT tokens (NT > 1 regroups the weights once, so that each vector holds
  // the two sub-blocks of elements 64p .. 64p+63 in element order). The same
  // integers in the same fold either way, so the choice cannot change a result.
  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const auto* w = weight_row<BlockIQ4_XS>(task, row);
    const int64_t n_blocks = task.cols / BlockIQ4_XS::kElems;
    if constexpr (NT == 1) {
      out[0] = decode_row(w, task.act_k + t0 * n_blocks, n_blocks);
      return;
    }
    const BlockQ8_K* a[NT];
    q8_k_token_rows<NT>(task, t0, n_blocks, a);
    float acc[NT] = {};
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
      const __m512i factors = block_factors(blk);
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
      // Four tokens at a time share the lane sums and the products
      // (kquant_groups_avx512.h); folded as kquant_accumulate_scaled folds.
      avx512_fold_token_groups<NT, false>(
          blk.d, acc,
          [&](int k, __m512i& isum, __m256i&) {
            const BlockQ8_K& ak = a[k][b];
            for (int p = 0; p < 4; ++p) {
              const __m512i aq = _mm512_loadu_si512(ak.qs + 64 * p);
              const __m512i signed_aq =
                  _mm512_mask_sub_epi8(aq, negative[p], _mm512_setzero_si512(), aq);
              const __m512i prod = _mm512_maddubs_epi16(magnitudes[p], signed_aq);
              isum = _mm512_dpwssd_epi32(isum, prod, factor_lanes[p]);
            }
            return ak.d;
          },
          KquantLanesAsSummed{});
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }
};

// Row `row`'s super-block b for a panel (kquant_panels_avx512.h): the
// levels + 128 in element order, factors ls - 32, which also take the
// + 128's share back out.
void decode_panel_row(const MatmulTask& task, int64_t row, int64_t b, KquantPanelRow& out) {
  const BlockIQ4_XS& blk = weight_row<BlockIQ4_XS>(task, row)[b];
  const __m512i table = _mm512_broadcast_i32x4(
      _mm_load_si128(reinterpret_cast<const __m128i*>(kIq4CodebookPlus128.v)));
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  // As in the tiles: [low | high nibbles] of sub-blocks s, s+1 in element order.
  const __m512i first_pair = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i second_pair = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (int h = 0; h < 2; ++h) {
    const __m512i raw = _mm512_loadu_si512(blk.qs + 64 * h);
    const __m512i lo = _mm512_and_si512(raw, low4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
    _mm512_store_si512(out.quants + 128 * h,
                       _mm512_shuffle_epi8(table, _mm512_permutex2var_epi64(lo, first_pair, hi)));
    _mm512_store_si512(out.quants + 128 * h + 64,
                       _mm512_shuffle_epi8(table, _mm512_permutex2var_epi64(lo, second_pair, hi)));
  }
  kquant_panel_row_signed_scales<8>(
      blk.d, [&](int j) { return iq4_xs_scale(blk, j) - 32; }, out);
}

}  // namespace

void matmul_rows_iq4_xs_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_rows_avx512<kPanelIQ4_XS, decode_panel_row>(task, r0, r1, IQ4_XSAvx512Dot{task});
}

}  // namespace kvforge
