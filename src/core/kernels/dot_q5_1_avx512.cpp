// Q5_1 weights x Q8-blocks activations, AVX-512 VNNI (affine_dot_avx512.h):
// the nibbles with each element's 5th bit added as 16, vpdpbusd's unsigned
// operand.
#include "core/formats/q5_1.h"
#include "core/kernels/affine_dot_avx512.h"

namespace kvforge {
namespace {

struct Q5_1Avx512Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_1);

  // A quad (4 blocks, 96 bytes) as 16-bit words: block i's d is word 12i,
  // its m word 12i+1, its qh words 12i+2..12i+3, its 16 nibble bytes words
  // 12i+4..12i+11. Two permutes per quad gather the nibble bytes (block i in
  // 128-bit lane i; byte e holds element e low and e+16 high) and, per
  // 128-bit lane i, the dwords [qh, qh, d | m << 16, -] of block i.
  template <bool kPartial, int kPairs>
  static AffineWeightGroup load_group(const uint8_t* blk, int64_t avail) {
    __m512i qs[4], meta[4];
    load_quads<kPartial, 2 * kPairs>(blk, avail, qs, meta);
    AffineWeightGroup wg{};  // w[1] stays zero for kPairs = 1
    for (int p = 0; p < kPairs; ++p)
      pair_levels(qs[p], qs[p + kPairs], meta[p], meta[p + kPairs], wg.w[p]);
    scales<kPairs>(meta, wg);
    return wg;
  }

  // The nibble bytes qs[j] and the meta dwords meta[j] of quad j < kQuads.
  template <bool kPartial, int kQuads>
  [[gnu::always_inline]] static void load_quads(const uint8_t* blk, int64_t avail, __m512i* qs,
                                                __m512i* meta) {
    alignas(64) static const uint16_t pick_qs_words[32] = {
        4,  5,  6,  7,  8,  9,  10, 11, 16, 17, 18, 19, 20, 21, 22, 23,
        28, 29, 30, 31, 32, 33, 34, 35, 40, 41, 42, 43, 44, 45, 46, 47};
    alignas(64) static const uint16_t pick_meta_words[32] = {
        2,  3,  2,  3,  0,  1,  0, 0, 14, 15, 14, 15, 12, 13, 0, 0,
        26, 27, 26, 27, 24, 25, 0, 0, 38, 39, 38, 39, 36, 37, 0, 0};
    const __m512i pick_qs = _mm512_load_si512(pick_qs_words);
    const __m512i pick_meta = _mm512_load_si512(pick_meta_words);
    for (int j = 0; j < kQuads; ++j) {
      const __m512i first = affine_load64<kPartial>(blk + 96 * j, avail - 96 * j);
      const __m512i rest =
          _mm512_castsi256_si512(affine_load32<kPartial>(blk + 96 * j + 64, avail - 96 * j - 64));
      qs[j] = _mm512_permutex2var_epi16(first, pick_qs, rest);
      meta[j] = _mm512_permutex2var_epi16(first, pick_meta, rest);
    }
  }

  // The 5-bit levels of quads p and p + kPairs (nibble bytes qs_a, qs_b,
  // meta dwords meta_a, meta_b) as the four parts of a pair.
  [[gnu::always_inline]] static void pair_levels(__m512i qs_a, __m512i qs_b, __m512i meta_a,
                                                 __m512i meta_b, __m512i* w) {
    // The 5th bits of 4 consecutive elements (bits 0-3 of an index) as 0x10
    // in each of 4 bytes.
    alignas(64) static const uint32_t fifth_bits[16] = {
        0x0,        0x10,       0x1000,     0x1010,     0x100000,   0x100010,
        0x101000,   0x101010,   0x10000000, 0x10000010, 0x10001000, 0x10001010,
        0x10100000, 0x10100010, 0x10101000, 0x10101010};
    const __m512i fifth = _mm512_load_si512(fifth_bits);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i u0 = _mm512_unpacklo_epi32(qs_a, qs_b);
    const __m512i u1 = _mm512_unpackhi_epi32(qs_a, qs_b);
    // Lane 4i + h: the qh of block i of quad p (h even) or p + kPairs (h
    // odd), the blocks whose 4 elements that lane of every part holds.
    const __m512i qh = _mm512_unpacklo_epi32(meta_a, meta_b);
    const __m512i parts[4] = {u0, u1, _mm512_srli_epi16(u0, 4), _mm512_srli_epi16(u1, 4)};
    for (int u = 0; u < 4; ++u) {
      // Part u, lane 4i + h holds elements 8u + 4 (h / 2) + 0..3.
      const __m512i shift =
          _mm512_add_epi32(_mm512_set1_epi32(8 * u),
                           _mm512_setr_epi32(0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4));
      const __m512i high = _mm512_permutexvar_epi32(_mm512_srlv_epi32(qh, shift), fifth);
      w[u] = _mm512_ternarylogic_epi32(parts[u], low4, high, 0xea);  // (A & B) | C
    }
  }

  // The blocks' d and m from the meta dwords, in the group's transposed order.
  template <int kPairs>
  [[gnu::always_inline]] static void scales(const __m512i* meta, AffineWeightGroup& wg) {
    // From the meta dwords: words 0-15 d, 16-31 m of block 4 (l % 4) + l / 4
    // (the transposed order), the first table for quads 0 and 1, the second
    // for quads 2 and 3.
    alignas(64) static const uint16_t pick_dm_words[2][32] = {
        {4, 36, 0, 0, 12, 44, 0, 0, 20, 52, 0, 0, 28, 60, 0, 0,
         5, 37, 0, 0, 13, 45, 0, 0, 21, 53, 0, 0, 29, 61, 0, 0},
        {0, 0, 4, 36, 0, 0, 12, 44, 0, 0, 20, 52, 0, 0, 28, 60,
         0, 0, 5, 37, 0, 0, 13, 45, 0, 0, 21, 53, 0, 0, 29, 61}};
    __m512i dm = _mm512_permutex2var_epi16(meta[0], _mm512_load_si512(pick_dm_words[0]), meta[1]);
    if constexpr (kPairs == 2) {
      const __m512i dm23 =
          _mm512_permutex2var_epi16(meta[2], _mm512_load_si512(pick_dm_words[1]), meta[3]);
      dm = _mm512_mask_blend_epi16(0xccccccccu, dm, dm23);  // words of quads 2, 3
    }
    wg.dw = _mm512_cvtph_ps(_mm512_castsi512_si256(dm));
    wg.mw = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(dm, 1));
  }
};

}  // namespace

void matmul_rows_q5_1_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  affine_matmul_avx512<Q5_1Avx512Blocks>(task, r0, r1);
}

}  // namespace kvforge
