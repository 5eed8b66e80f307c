// Q5_0 weights x Q8 activations (the Q8-blocks form), AVX-512 VNNI: the
// quants q = w + 16 as vpdpbusd's unsigned operand, in the shared kernel of
// avx512_block32_dot.h (exact per-block integer sums folded as
// block32_fold.h defines: the scalar kernel's bits).
#include <algorithm>

#include "core/formats/q5_0.h"
#include "core/kernels/avx512_block32_dot.h"

namespace kvforge {
namespace {

// 16-bit word indices into the quad's 88 bytes (block i: scale word 11i, h
// words 11i+1 (elements 0-15) and 11i+2 (16-31), nibbles 11i+3..11i+10),
// which vpermt2w reads as words 0-31 of the first 64 bytes and 32-43 of the rest.
struct Q5_0QuadIndex {
  alignas(64) uint16_t qs[32];
  alignas(64) uint16_t h_and_d[4][32];  // per place q in the group
};

constexpr Q5_0QuadIndex make_quad_index() {
  Q5_0QuadIndex x{};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) x.qs[8 * i + j] = uint16_t(11 * i + 3 + j);
    for (int q = 0; q < 4; ++q) {
      x.h_and_d[q][i] = uint16_t(11 * i + 1);           // 64-bit word 0: h bits of elements 0-15
      x.h_and_d[q][4 + i] = uint16_t(11 * i + 2);       // 64-bit word 1: h bits of elements 16-31
      x.h_and_d[q][16 + 4 * q + i] = uint16_t(11 * i);  // 64-bit word 4 + q: the scales
    }
  }
  return x;
}

constexpr Q5_0QuadIndex kQuadIndex = make_quad_index();

struct Q5_0Blocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_0);
  static constexpr int kOffsetShift = 4;  // q = w + 16

  // Quad q of the group at blk. The nibbles split into lo/hi like Q4_0's
  // (element j low, j + 16 high in byte j of qs). A block's h, one bit per
  // element in element order, is per half a 16-bit byte mask of that half:
  // the 4 blocks' lower (upper) h words make the 64-bit mask of lo (hi),
  // under which 16 is added. Only the first `bytes` at blk are read.
  static void load_quad(const uint8_t* blk, int64_t bytes, int q, __m512i& lo, __m512i& hi,
                        __m512i& d) {
    const __m512i first = avx512_load_prefix(blk, bytes);
    const __m512i rest = avx512_load_prefix(blk + 64, std::min<int64_t>(bytes - 64, 24));
    const __m512i qs = _mm512_permutex2var_epi16(first, _mm512_load_si512(kQuadIndex.qs), rest);
    d = _mm512_permutex2var_epi16(first, _mm512_load_si512(kQuadIndex.h_and_d[q]), rest);
    const __m128i h = _mm512_castsi512_si128(d);
    const __m512i low4 = _mm512_set1_epi8(0x0f), sixteen = _mm512_set1_epi8(16);
    lo = _mm512_and_si512(qs, low4);
    hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), low4);
    lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(uint64_t(_mm_cvtsi128_si64(h))), lo, sixteen);
    hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(uint64_t(_mm_extract_epi64(h, 1))), hi, sixteen);
  }

  template <int NQ>
  static void load_group(const uint8_t* blk, int64_t bytes, Block32WeightGroup& g) {
    __m512i d[4];
    for (int q = 0; q < 4; ++q) {
      const int64_t at = 4 * q * kBlockBytes;
      if (q < NQ) {
        load_quad(blk + at, bytes - at, q, g.lo[q], g.hi[q], d[q]);
      } else {
        d[q] = _mm512_setzero_si512();
      }
    }
    // Quad q's scales sit in 64-bit word 4 + q of d[q].
    __m512i scales = _mm512_mask_blend_epi64(0x20, d[0], d[1]);
    scales = _mm512_mask_blend_epi64(0x40, scales, d[2]);
    scales = _mm512_mask_blend_epi64(0x80, scales, d[3]);
    g.dw = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(scales, 1));
  }
};

}  // namespace

void matmul_rows_q5_0_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_block32_avx512<Q5_0Blocks>(task, r0, r1);
}

}  // namespace kvforge
