// Q3_K weights x Q8_K activations, AVX-512 (BW + VNNI). Per 64 elements
// 64p .. 64p+63 (sub-blocks 4p .. 4p+3, one per 128-bit lane): the low bits
// are bit pairs c and c + 1 (c = 2 (p % 2)) of the 32 bytes qs[32 (p / 2) ..],
// moved to bits 0-1 by one variable shift of a register holding those bytes
// in both halves; the high bits are bits 2p and 2p + 1 of the 32 hmask bytes,
// tested into a byte mask that adds 4. The quants are taken as the stored
// u = low | high << 2 in [0, 7]: vpmaddubsw (u x signed activations, pair
// sums <= 2*7*127) then vpdpwssd with the sub-blocks' signed scales
// s = sc - 32, and since q = u - 4,
//   isum = sum_j s[j] * sum u * a  -  4 * sum_j s[j] * bsums[j].
//
// The integer sums are finished four (super-block, token) pairs at a time
// (kquant_groups_avx512.h) and folded with kquant_accumulate_scaled_terms,
// so the bits match the scalar kernel's; decode groups four super-blocks of
// the row (kquant_decode_row.h).
#include "core/formats/q3_k.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_decode_row.h"
#include "core/kernels/kquant_groups_avx512.h"
#include "core/kernels/kquant_panels_avx512.h"
#include "core/kernels/q3_k_scales.h"
#include "core/kernels/q3_k_scales_avx2.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// One super-block's weights in the form the dot products use.
struct Q3_KWeights {
  __m512i u[4];       // stored quants u of elements 64p .. 64p+63, bytes in [0, 7]
  __m512i scales[4];  // int16 lanes 8k .. 8k+7 of u[p]'s products: s[4p + k]
  __m256i s16;        // s[0..15] as int16
};

// Exact integer sums of one super-block and one token: the lanes of `isum`
// add up to sum_j s[j] * sum u * a, those of `offset` to sum_j s[j] * bsums[j].
inline void block_sums(const Q3_KWeights& wt, const BlockQ8_K& a, __m512i& isum, __m256i& offset) {
  // Two chains of dependent vpdpwssd rather than one: shorter latency per block.
  __m512i even =
      _mm512_dpwssd_epi32(_mm512_setzero_si512(),
                          _mm512_maddubs_epi16(wt.u[0], _mm512_loadu_si512(a.qs)), wt.scales[0]);
  __m512i odd = _mm512_dpwssd_epi32(_mm512_setzero_si512(),
                                    _mm512_maddubs_epi16(wt.u[1], _mm512_loadu_si512(a.qs + 64)),
                                    wt.scales[1]);
  even = _mm512_dpwssd_epi32(even, _mm512_maddubs_epi16(wt.u[2], _mm512_loadu_si512(a.qs + 128)),
                             wt.scales[2]);
  odd = _mm512_dpwssd_epi32(odd, _mm512_maddubs_epi16(wt.u[3], _mm512_loadu_si512(a.qs + 192)),
                            wt.scales[3]);
  isum = _mm512_add_epi32(even, odd);
  offset = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)), wt.s16);
}

// [i0 o0 i1 o1 ...] (avx512_reduce_four_pairs of isum and offset) to the
// blocks' integer dot products i_n - 4 o_n in lanes 2n (lanes 2n+1 keep o_n).
inline __m256i totals(__m256i ints) {
  return _mm256_sub_epi32(ints, _mm256_slli_epi32(_mm256_srli_epi64(ints, 32), 2));
}

struct Q3_KAvx512Format {
  static constexpr bool kMin = false;
  static void sums(const Q3_KWeights& wt, const BlockQ8_K& a, __m512i& isum, __m256i& msum) {
    block_sums(wt, a, isum, msum);
  }
  static uint32_t scales(const BlockQ3_K& blk) { return blk.d; }
  static __m256i adjust(__m256i ints) { return totals(ints); }

  // Per half of the register: shift bit pair 0 / 1 (p even) or 2 / 3 (p odd)
  // of each byte to bits 0-1.
  const __m512i shift_even = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  const __m512i shift_odd = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
  // int16 lane i of a vpmaddubsw result covers bytes 2i, 2i+1: sub-block i / 8
  // of the vector's four.
  const __m512i pick_scale = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1,
                                              1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);

  Q3_KWeights weights(const BlockQ3_K& blk) const {
    Q3_KWeights wt;
    const __m128i s8 = _mm_sub_epi8(q3_k_scales_avx2(blk), _mm_set1_epi8(32));
    wt.s16 = _mm256_cvtepi8_epi16(s8);
    const __m512i hmask =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.hmask)));
    for (int p = 0; p < 4; ++p) {
      const __m512i bits = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * (p / 2))));
      const __m512i low = _mm512_and_si512(
          _mm512_srlv_epi16(bits, p % 2 == 0 ? shift_even : shift_odd), _mm512_set1_epi8(3));
      // hmask bit 2p for the low 256 bits' elements, 2p + 1 for the high ones'.
      const __m512i high_bit = _mm512_inserti64x4(_mm512_set1_epi8(char(1 << (2 * p))),
                                                  _mm256_set1_epi8(char(1 << (2 * p + 1))), 1);
      const __mmask64 high = _mm512_test_epi8_mask(hmask, high_bit);
      wt.u[p] = _mm512_mask_add_epi8(low, high, low, _mm512_set1_epi8(4));
      wt.scales[p] =
          _mm512_permutexvar_epi16(_mm512_add_epi16(pick_scale, _mm512_set1_epi16(short(4 * p))),
                                   _mm512_castsi256_si512(wt.s16));
    }
    return wt;
  }
};

// Row `row`'s super-block b for a panel (kquant_panels_avx512.h): the levels
// + 4 (low bit pair | high bit << 2, in [0, 7]) in element order (bit pair f
// of qs[32h + l] and bit 4h + f of hmask[l] are element 128h + 32f + l);
// factors and coefs sc[j] - 32, the coefs taking the + 4 back out.
void decode_panel_row(const MatmulTask& task, int64_t row, int64_t b, KquantPanelRow& out) {
  const BlockQ3_K& blk = weight_row<BlockQ3_K>(task, row)[b];
  const __m256i low2 = _mm256_set1_epi8(0x03), bit0 = _mm256_set1_epi8(0x01);
  const __m256i hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.hmask));
  for (int h = 0; h < 2; ++h) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * h));
    auto* dst = reinterpret_cast<__m256i*>(out.quants + 128 * h);
    for (int f = 0; f < 4; ++f) {
      const __m256i low = _mm256_and_si256(_mm256_srli_epi16(q, 2 * f), low2);
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hmask, 4 * h + f), bit0);
      _mm256_store_si256(dst + f, _mm256_or_si256(low, _mm256_slli_epi16(high, 2)));
    }
  }
  uint8_t sc[16];
  q3_k_unpack_scales(blk.scales, sc);
  kquant_panel_row_signed_scales<16>(
      blk.d, [&](int j) { return sc[j] - 32; }, out);
}

}  // namespace

void matmul_rows_q3_k_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_rows_avx512<kPanelQ3_K, decode_panel_row>(
      task, r0, r1, KquantGroupsAvx512Dot<BlockQ3_K, Q3_KAvx512Format>{task});
}

}  // namespace kvforge
