// Q4_1 weights x Q8-blocks activations, AVX-512 VNNI (affine_dot_avx512.h):
// the nibbles are vpdpbusd's unsigned operand as they are.
#include "core/formats/q4_1.h"
#include "core/kernels/affine_dot_avx512.h"

namespace kvforge {
namespace {

struct Q4_1Avx512Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_1);

  // A quad (4 blocks, 80 bytes) as 16-bit words: block i's d is word 10i, its
  // m word 10i+1, its 16 nibble bytes words 10i+2..10i+9. One permute per
  // quad gathers the nibble bytes (block i in 128-bit lane i; byte e holds
  // element e low and e+16 high), two per group the halves.
  template <bool kPartial, int kPairs>
  static AffineWeightGroup load_group(const uint8_t* blk, int64_t avail) {
    alignas(64) static const uint16_t pick_qs_words[32] = {
        2,  3,  4,  5,  6,  7,  8,  9,  12, 13, 14, 15, 16, 17, 18, 19,
        22, 23, 24, 25, 26, 27, 28, 29, 32, 33, 34, 35, 36, 37, 38, 39};
    // Words 0-15: d, 16-31: m of block 4 (l % 4) + l / 4 (block l / 4 of
    // quad l % 4: the transposed order), the first table for quads 0 and 1,
    // the second for quads 2 and 3.
    alignas(64) static const uint16_t pick_dm_words[2][32] = {
        {0, 32, 0, 0, 10, 42, 0, 0, 20, 52, 0, 0, 30, 62, 0, 0,
         1, 33, 0, 0, 11, 43, 0, 0, 21, 53, 0, 0, 31, 63, 0, 0},
        {0, 0, 0, 32, 0, 0, 10, 42, 0, 0, 20, 52, 0, 0, 30, 62,
         0, 0, 1, 33, 0, 0, 11, 43, 0, 0, 21, 53, 0, 0, 31, 63}};
    constexpr int kQuads = 2 * kPairs;
    const __m512i pick_qs = _mm512_load_si512(pick_qs_words);
    __m512i first[4], qs[4];
    for (int j = 0; j < kQuads; ++j) {
      first[j] = affine_load64<kPartial>(blk + 80 * j, avail - 80 * j);
      const __m512i rest =
          _mm512_castsi128_si512(affine_load16<kPartial>(blk + 80 * j + 64, avail - 80 * j - 64));
      qs[j] = _mm512_permutex2var_epi16(first[j], pick_qs, rest);
    }
    AffineWeightGroup wg{};  // w[1] stays zero for kPairs = 1
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int p = 0; p < kPairs; ++p) {
      const __m512i u0 = _mm512_unpacklo_epi32(qs[p], qs[p + kPairs]);
      const __m512i u1 = _mm512_unpackhi_epi32(qs[p], qs[p + kPairs]);
      wg.w[p][0] = _mm512_and_si512(u0, low4);
      wg.w[p][1] = _mm512_and_si512(u1, low4);
      wg.w[p][2] = _mm512_and_si512(_mm512_srli_epi16(u0, 4), low4);
      wg.w[p][3] = _mm512_and_si512(_mm512_srli_epi16(u1, 4), low4);
    }
    __m512i dm = _mm512_permutex2var_epi16(first[0], _mm512_load_si512(pick_dm_words[0]), first[1]);
    if constexpr (kPairs == 2) {
      const __m512i dm23 =
          _mm512_permutex2var_epi16(first[2], _mm512_load_si512(pick_dm_words[1]), first[3]);
      dm = _mm512_mask_blend_epi16(0xccccccccu, dm, dm23);  // words of quads 2, 3
    }
    wg.dw = _mm512_cvtph_ps(_mm512_castsi512_si256(dm));
    wg.mw = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(dm, 1));
    return wg;
  }
};

}  // namespace

void matmul_rows_q4_1_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  affine_matmul_avx512<Q4_1Avx512Blocks>(task, r0, r1);
}

}  // namespace kvforge
