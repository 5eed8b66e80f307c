// Q2_K weights x Q8_K activations, AVX-512 (BW + VNNI). A sub-block's scale
// times a quant is at most 15 * 3 = 45, so the weights become unsigned bytes
// sc * q and one vpdpbusd per 64 elements and token does all the work of the
// integer sum: sum_j sc[j] * sum q * a needs no per-sub-block scale step.
//
// The products come from a lookup: a 64-byte table whose 128-bit lane k holds
// q * sc[4m + k] at byte 4q + m (q, m < 4), built once per super-block, and
// vpshufb indexed by 4q + p for the vector of elements 64p .. 64p+63, whose
// lane k is exactly sub-block 4p + k. Bytes 4q .. 4q+3 share q, so the table
// is the broadcast scales times a constant with one 16-bit multiply (no
// carries: each byte product is <= 45).
//
// Elements 64p .. 64p+63 are bit pairs c (in the low 256 bits) and c + 1 (in
// the high 256 bits), c = 2 (p % 2), of the 32 bytes qs[32 (p / 2) ..]: both
// halves of a register get those bytes and one variable shift moves each
// half's pair to bits 2-3. The mins use the activation block sums.
//
// The integer sums are finished four (super-block, token) pairs at a time
// (kquant_groups_avx512.h) and folded with kquant_accumulate_terms, so the
// bits match the scalar kernel's. Decode groups four super-blocks of the row
// and folds each group while the next one is computed, which keeps the
// fold's chain of dependent adds off the critical path.
#include "core/formats/q2_k.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/kquant_decode_row.h"
#include "core/kernels/kquant_groups_avx512.h"
#include "core/kernels/kquant_panels_avx512.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

// One super-block's weights in the form the dot products use.
struct Q2_KWeights {
  __m512i products[4];  // sc * q of elements 64p .. 64p+63, unsigned bytes
  __m256i mins;         // m[0..15] as int16
};

// Exact integer sums of one super-block and one token: the lanes of `isum`
// add up to sum_j sc[j] * sum q * a, those of `msum` to sum_j m[j] * bsums[j].
inline void block_sums(const Q2_KWeights& wt, const BlockQ8_K& a, __m512i& isum, __m256i& msum) {
  // Two chains of dependent vpdpbusd rather than one: shorter latency per block.
  __m512i even =
      _mm512_dpbusd_epi32(_mm512_setzero_si512(), wt.products[0], _mm512_loadu_si512(a.qs));
  __m512i odd =
      _mm512_dpbusd_epi32(_mm512_setzero_si512(), wt.products[1], _mm512_loadu_si512(a.qs + 64));
  even = _mm512_dpbusd_epi32(even, wt.products[2], _mm512_loadu_si512(a.qs + 128));
  odd = _mm512_dpbusd_epi32(odd, wt.products[3], _mm512_loadu_si512(a.qs + 192));
  isum = _mm512_add_epi32(even, odd);
  msum = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)), wt.mins);
}

struct Q2_KAvx512Format {
  static constexpr bool kMin = true;
  static void sums(const Q2_KWeights& wt, const BlockQ8_K& a, __m512i& isum, __m256i& msum) {
    block_sums(wt, a, isum, msum);
  }
  // d | dmin << 16, as avx512_kquant_terms takes them.
  static uint32_t scales(const BlockQ2_K& blk) {
    return uint32_t(blk.d) | uint32_t(blk.dmin) << 16;
  }
  static __m256i adjust(__m256i ints) { return ints; }

  // Lane k, byte 4q + m <- scale byte 4m + k.
  const __m512i table_pick = _mm512_add_epi8(
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12)),
      _mm512_set_epi32(0x03030303, 0x03030303, 0x03030303, 0x03030303, 0x02020202, 0x02020202,
                       0x02020202, 0x02020202, 0x01010101, 0x01010101, 0x01010101, 0x01010101, 0, 0,
                       0, 0));
  // int16 lanes of a 128-bit lane: bytes 4q .. 4q+3 are multiplied by q.
  const __m512i level = _mm512_broadcast_i32x4(_mm_setr_epi16(0, 0, 1, 1, 2, 2, 3, 3));
  // Per half of the register: shift bit pair 0 / 1 (p even) or 2 / 3 (p odd)
  // of each byte to bits 2-3.
  const __m512i shift_left_even =
      _mm512_inserti64x4(_mm512_set1_epi16(2), _mm256_setzero_si256(), 1);
  const __m512i shift_right_odd = _mm512_inserti64x4(_mm512_set1_epi16(2), _mm256_set1_epi16(4), 1);

  Q2_KWeights weights(const BlockQ2_K& blk) const {
    Q2_KWeights wt;
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
    const __m512i scales = _mm512_and_si512(
        _mm512_shuffle_epi8(_mm512_broadcast_i32x4(raw), table_pick), _mm512_set1_epi8(0x0f));
    const __m512i table = _mm512_mullo_epi16(scales, level);
    wt.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0f)));
    for (int p = 0; p < 4; ++p) {
      const __m512i bits = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * (p / 2))));
      const __m512i moved = p % 2 == 0 ? _mm512_sllv_epi16(bits, shift_left_even)
                                       : _mm512_srlv_epi16(bits, shift_right_odd);
      // (moved & 0x0c) | p: the table index 4q + p.
      const __m512i index =
          _mm512_ternarylogic_epi32(moved, _mm512_set1_epi8(0x0c), _mm512_set1_epi8(char(p)), 0xea);
      wt.products[p] = _mm512_shuffle_epi8(table, index);
    }
    return wt;
  }
};

// Row `row`'s super-block b for a panel (kquant_panels_avx512.h): the 2-bit
// levels in element order (bit pair f of qs[32h + l] is element
// 128h + 32f + l), factors and coefs the low and high nibbles of scales[j].
void decode_panel_row(const MatmulTask& task, int64_t row, int64_t b, KquantPanelRow& out) {
  const BlockQ2_K& blk = weight_row<BlockQ2_K>(task, row)[b];
  const __m256i low2 = _mm256_set1_epi8(0x03);
  for (int h = 0; h < 2; ++h) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * h));
    auto* dst = reinterpret_cast<__m256i*>(out.quants + 128 * h);
    for (int f = 0; f < 4; ++f)
      _mm256_store_si256(dst + f, _mm256_and_si256(_mm256_srli_epi16(q, 2 * f), low2));
  }
  for (int j = 0; j < 16; ++j) {
    out.factors[j] = blk.scales[j] & 15;
    out.coefs[j] = blk.scales[j] >> 4;
  }
  out.d = avx512_load_half(reinterpret_cast<const uint8_t*>(&blk.d));
  out.dmin = avx512_load_half(reinterpret_cast<const uint8_t*>(&blk.dmin));
}

}  // namespace

void matmul_rows_q2_k_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_kquant_rows_avx512<kPanelQ2_K, decode_panel_row>(
      task, r0, r1, KquantGroupsAvx512Dot<BlockQ2_K, Q2_KAvx512Format>{task});
}

}  // namespace kvforge
