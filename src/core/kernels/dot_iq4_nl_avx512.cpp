// IQ4_NL weights x Q8 activations (the Q8-blocks form), AVX-512 VNNI: the
// codebook levels + 128, looked up by vpshufb, as vpdpbusd's unsigned
// operand, in the shared kernel of avx512_block32_dot.h (exact per-block
// integer sums folded as block32_fold.h defines: the scalar kernel's bits).
#include <algorithm>

#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_nl.h"
#include "core/kernels/avx512_block32_dot.h"

namespace kvforge {
namespace {

// 16-bit word indices for vpermt2w (words 0-31 from the first source, 32-63
// from the second). qs: the indices of a quad's 4 blocks from its 72 bytes
// (block i: scale word 9i, indices 9i+1..9i+8). d[p]: the scales of 8
// blocks (words 9i) from the 128 bytes at a quad pair, into words 16 + 8p..
struct IQ4_NLQuadIndex {
  alignas(64) uint16_t qs[32];
  alignas(64) uint16_t d[2][32];
};

constexpr IQ4_NLQuadIndex make_quad_index() {
  IQ4_NLQuadIndex x{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) x.qs[8 * i + j] = uint16_t(9 * i + 1 + j);
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < 8; ++i) x.d[p][16 + 8 * p + i] = uint16_t(9 * i);
  return x;
}

constexpr IQ4_NLQuadIndex kQuadIndex = make_quad_index();

struct IQ4_NLBlocks {
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4_NL);
  static constexpr int kOffsetShift = 7;  // level + 128

  // The indices split into lo/hi like Q4_0's nibbles (element j low, j + 16
  // high in byte j of qs), then each 128-bit lane looks them up in the table.
  // Only the first `bytes` at blk are read.
  static void load_quad(const uint8_t* blk, int64_t bytes, __m512i& lo, __m512i& hi) {
    const __m512i first = avx512_load_prefix(blk, bytes);
    const __m512i rest = avx512_load_prefix(blk + 64, std::min<int64_t>(bytes - 64, 8));
    const __m512i qs = _mm512_permutex2var_epi16(first, _mm512_load_si512(kQuadIndex.qs), rest);
    avx512_lookup_nibbles(kIq4CodebookPlus128, qs, lo, hi);
  }

  template <int NQ>
  static void load_group(const uint8_t* blk, int64_t bytes, Block32WeightGroup& g) {
    for (int q = 0; q < NQ; ++q) {
      const int64_t at = 4 * q * kBlockBytes;
      load_quad(blk + at, bytes - at, g.lo[q], g.hi[q]);
    }
    __m512i d[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int p = 0; 2 * p < NQ; ++p) {  // the quad pair's 144 bytes: scales within the first 128
      const int64_t at = 8 * p * kBlockBytes;
      d[p] = _mm512_permutex2var_epi16(avx512_load_prefix(blk + at, bytes - at),
                                       _mm512_load_si512(kQuadIndex.d[p]),
                                       avx512_load_prefix(blk + at + 64, bytes - at - 64));
    }
    g.dw = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(_mm512_mask_blend_epi64(0xc0, d[0], d[1]), 1));
  }
};

}  // namespace

void matmul_rows_iq4_nl_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_block32_avx512<IQ4_NLBlocks>(task, r0, r1);
}

}  // namespace kvforge
