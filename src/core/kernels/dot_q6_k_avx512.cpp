// Q6_K weights x Q8_K activations, AVX-512 (BW + VNNI). Per half super-block
// the 6-bit quants (0..63) of elements 0-63 and 64-127 are rebuilt from the
// 64 ql bytes and 32 qh bytes with shifts and masks; vpmaddubsw multiplies
// them with the activations and vpdpwssd applies the four 16-element
// sub-block scales of each vector; the -32 offset comes off through the
// activation block sums. Exact integers, so bit-identical to the scalar kernel.
#include "core/formats/q6_k.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_groups_avx512.h"
#include "core/kernels/kquant_panels_avx512.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// Reduced lanes [dot, offset] per token -> [dot - 32 offset, 0]: the second
// lane's product is then (0 * da) * 0, the zero kquant_accumulate subtracts
// for a type without a min (its sign included).
struct Q6_KTotals {
  __m256i operator()(__m256i ints) const {
    return _mm256_blend_epi32(
        _mm256_sub_epi32(ints, _mm256_slli_epi32(_mm256_srli_epi64(ints, 32), 5)),
        _mm256_setzero_si256(), 0xaa);
  }
};

struct Q6_KAvx512Block {
  // A super-block's lane sums against token block ak: isum of scale * q * a,
  // offset of scale * bsums (the -32 comes off as 32 * offset).
  static void token_vectors(const __m512i q[4], const __m512i scales[4], __m256i scales16,
                            const BlockQ8_K& ak, __m512i& isum, __m256i& offset) {
    isum = _mm512_setzero_si512();
    for (int i = 0; i < 4; ++i) {
      const __m512i p = _mm512_maddubs_epi16(q[i], _mm512_loadu_si512(ak.qs + 64 * i));
      isum = _mm512_dpwssd_epi32(isum, p, scales[i]);
    }
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ak.bsums));
    offset = _mm256_madd_epi16(bsums, scales16);
  }

  // The super-block's quants (q[2h]: elements 128h + 0..63, q[2h+1]:
  // 128h + 64..127) and each vpmaddubsw lane's sub-block scale.
  static void weights(const BlockQ6_K& blk, __m256i scales16, __m512i q[4], __m512i scales[4]) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i bits45 = _mm512_set1_epi8(0x30);
    // int16 lane i of a vpmaddubsw result covers bytes 2i, 2i+1: element
    // 2i of the vector, so sub-block (i / 8) of the vector's four.
    const __m512i pick_scale = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1,
                                                1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i all_scales = _mm512_castsi256_si512(scales16);
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(blk.ql + 64 * h);
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * h));
      // qh bits (0,1) / (2,3) / (4,5) / (6,7) go to bits 4,5 of elements in
      // quarters 0 / 1 / 2 / 3 of the half.
      const __m512i high_lo = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_slli_epi16(qh, 4)),
                                                 _mm256_slli_epi16(qh, 2), 1);
      const __m512i high_hi =
          _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
      q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(high_lo, bits45));
      q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                     _mm512_and_si512(high_hi, bits45));
      for (int part = 0; part < 2; ++part) {
        const __m512i first = _mm512_set1_epi16(short(8 * h + 4 * part));
        scales[2 * h + part] =
            _mm512_permutexvar_epi16(_mm512_add_epi16(pick_scale, first), all_scales);
      }
    }
  }

  template <int NT>
  static void add_block(const BlockQ6_K& blk, const BlockQ8_K* const* a, int64_t b, float* acc) {
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
    __m512i q[4], scales[4];
    weights(blk, scales16, q, scales);
    if constexpr (NT == 1) {
      const float d = avx512_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
      __m512i isum;
      __m256i offset_lanes;
      token_vectors(q, scales, scales16, a[0][b], isum, offset_lanes);
      int32_t dot = 0, offset = 0;
      avx512_hsum2_epi32(isum, offset_lanes, dot, offset);
      acc[0] = kquant_accumulate(acc[0], d, 0.0f, a[0][b].d, dot - 32 * offset, 0);
    } else {  // four tokens at a time share the reductions and products
      avx512_fold_token_groups<NT, true>(
          blk.d, acc,
          [&](int k, __m512i& isum, __m256i& offset) {
            token_vectors(q, scales, scales16, a[k][b], isum, offset);
            return a[k][b].d;
          },
          Q6_KTotals{});
    }
  }
};

// Row `row`'s super-block b for a panel (kquant_panels_avx512.h): the 6-bit
// levels q (the weight is q - 32) in element order; factors and coefs are
// the sub-blocks' scales, the coefs taking the - 32 back out.
void decode_panel_row(const MatmulTask& task, int64_t row, int64_t b, KquantPanelRow& out) {
  const BlockQ6_K& blk = weight_row<BlockQ6_K>(task, row)[b];
  const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(0x03);
  // Bits 2s, 2s+1 of qh, moved to bits 4-5 of each byte.
  auto high = [&](__m256i qh, int s) {
    const __m256i bits = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * s), low2);
    return _mm256_slli_epi16(bits, 4);
  };
  for (int h = 0; h < 2; ++h) {
    const auto* ql = reinterpret_cast<const __m256i*>(blk.ql + 64 * h);
    const __m256i ql0 = _mm256_loadu_si256(ql), ql1 = _mm256_loadu_si256(ql + 1);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * h));
    const __m256i hi0 = _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4);
    const __m256i hi1 = _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4);
    auto* q = reinterpret_cast<__m256i*>(out.quants + 128 * h);
    _mm256_store_si256(q, _mm256_or_si256(_mm256_and_si256(ql0, low4), high(qh, 0)));
    _mm256_store_si256(q + 1, _mm256_or_si256(_mm256_and_si256(ql1, low4), high(qh, 1)));
    _mm256_store_si256(q + 2, _mm256_or_si256(hi0, high(qh, 2)));
    _mm256_store_si256(q + 3, _mm256_or_si256(hi1, high(qh, 3)));
  }
  kquant_panel_row_signed_scales<16>(
      blk.d, [&](int j) { return blk.scales[j]; }, out);
}

}  // namespace

void matmul_rows_q6_k_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_rows_avx512<kPanelQ6_K, decode_panel_row>(
      task, r0, r1, KquantRowDot<BlockQ6_K, Q6_KAvx512Block>{task});
}

}  // namespace kvforge
