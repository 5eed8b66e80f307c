// The AVX-512 VNNI kernel for Q8-blocks weights paired with q8_0 (Q5_0,
// IQ4_NL), for the dot_<type>_avx512.cpp files only.
//
// A row is taken 16 blocks ("group") at a time, in 4 quads of 4 blocks.
// Within a quad, as in avx512_q8_block_dot.h, `lo` holds elements 0..15 of
// block i in bytes 16i..16i+15 and `hi` its elements 16..31, so that two
// vpdpbusd leave block i's partial sums in int32 lanes 4i..4i+3. The weights
// are vpdpbusd's unsigned operand, offset by +2^kOffsetShift (Q5_0: q = w +
// 16; IQ4_NL: level + 128); the activations, the signed operand, arrive in
// the plain Q8-blocks layout (matmul_task.h) and are rearranged into quads,
// with each block's sum times the offset, once per call and thread (not once
// per tile: a decode call would redo it for every 4 rows). That product is
// taken back out after the reduction, so every block's integer dot product
// is exact.
//
// Per (row, token, group): 8 vpdpbusd, a 4 -> 1 register reduction that
// leaves block b's sum in lane b (avx512_block_sums16), and one f32 fold of
// all 16 blocks, acc + (dw * da) * float(isum) lane by lane, unfused: the
// sequence block32_fold.h defines, so results are the scalar kernel's bits.
// (Scaling each quad's partial sums in f32 as the Q4_0 kernel does would
// skip the reduction, but needs every block's dw * da spread over its 4
// lanes per quad, which costs about as much, and is not the scalar bits.)
//
// A row's last, partial group reads zero bytes for the missing weight blocks
// (masked loads) and zero activations and scales (a padded copy, once per
// call), so isum, dw and da are 0 there and the fold adds +0.
#pragma once

#include <cstring>
#include <vector>

#include "core/formats/levels_plus_128.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/register_tile_loop.h"

namespace kvforge {
namespace {

inline constexpr int kBlock32GroupBlocks = 16;
// Batch tiles: 4 rows x 8 tokens. Unpacking a group of weights costs about
// as much as one or two tokens' dot products with it, so it is spread over
// 8 tokens; the 32 accumulators live in memory (L1) at this size.
inline constexpr int kBlock32RowTile = 4, kBlock32TokenTile = 8;

// One group of a weight row: vpdpbusd operands per quad, and the 16 block
// scales as f32 in block order.
struct Block32WeightGroup {
  __m512i lo[4], hi[4];
  __m512 dw;
};

// One token's activations for a group: quants per quad in the quad layout,
// per block the offset times the sum of its quants, and the 16 block scales.
struct Block32TokenGroup {
  __m512i lo[4], hi[4];
  __m512i offset_sums;
  __m512 da;
};

// The first n bytes at p (n clamped to 0..64), zeros after them; masked, so
// nothing beyond them is read.
inline __m512i avx512_load_prefix(const uint8_t* p, int64_t n) {
  if (n <= 0) return _mm512_setzero_si512();
  return _mm512_maskz_loadu_epi8(n >= 64 ? ~__mmask64(0) : (__mmask64(1) << n) - 1, p);
}

// Codes in nibbles (element j in the low nibble of byte j, element j + 16 in
// the high one, per 128-bit lane) looked up in a table of 16 levels + 128:
// lo holds the low nibbles' levels, hi the high ones'.
inline void avx512_lookup_nibbles(const LevelsPlus128& levels, __m512i qs, __m512i& lo,
                                  __m512i& hi) {
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(levels.v)));
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  lo = _mm512_shuffle_epi8(table, _mm512_and_si512(qs, low4));
  hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(qs, 4), low4));
}

// Lane b: block b's sum, from p[q] holding block 4q+i's partial sums in lanes
// 4i..4i+3.
inline __m512i avx512_block_sums16(const __m512i (&p)[4]) {
  // Per 128-bit lane i: [quad 0 block i: 2 partials, quad 1 block i: 2 partials].
  const __m512i s01 =
      _mm512_add_epi32(_mm512_unpacklo_epi64(p[0], p[1]), _mm512_unpackhi_epi64(p[0], p[1]));
  const __m512i s23 =
      _mm512_add_epi32(_mm512_unpacklo_epi64(p[2], p[3]), _mm512_unpackhi_epi64(p[2], p[3]));
  // Per 128-bit lane i: blocks i, 4+i, 8+i, 12+i.
  const __m512 a = _mm512_castsi512_ps(s01), b = _mm512_castsi512_ps(s23);
  const __m512i t =
      _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))),
                       _mm512_castps_si512(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))));
  const __m512i block_order =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_epi32(block_order, t);
}

// All groups of one token, from its quants a and scales da (the plain
// Q8-blocks layout) of n_blocks blocks; unit: the weights' offset in every byte.
inline void prepare_token_groups(const int8_t* a, const float* da, int64_t n_blocks, __m512i unit,
                                 Block32TokenGroup* out) {
  for (int64_t b0 = 0; b0 < n_blocks; b0 += kBlock32GroupBlocks, ++out) {
    alignas(64) int8_t padded_quants[32 * kBlock32GroupBlocks];
    alignas(64) float padded_scales[kBlock32GroupBlocks];
    const int8_t* aq = a + 32 * b0;
    const float* ad = da + b0;
    if (n_blocks - b0 < kBlock32GroupBlocks) {  // the last, partial group: zero-padded
      std::memset(padded_quants, 0, sizeof(padded_quants));
      std::memset(padded_scales, 0, sizeof(padded_scales));
      std::memcpy(padded_quants, aq, size_t(32 * (n_blocks - b0)));
      std::memcpy(padded_scales, ad, size_t(n_blocks - b0) * sizeof(float));
      aq = padded_quants;
      ad = padded_scales;
    }
    __m512i sums[4];
    for (int q = 0; q < 4; ++q) {
      // Two blocks per register: [b0 0-15, b0 16-31, b1 0-15, b1 16-31].
      const __m512i b01 = _mm512_loadu_si512(aq + 128 * q);
      const __m512i b23 = _mm512_loadu_si512(aq + 128 * q + 64);
      out->lo[q] = _mm512_shuffle_i64x2(b01, b23, _MM_SHUFFLE(2, 0, 2, 0));
      out->hi[q] = _mm512_shuffle_i64x2(b01, b23, _MM_SHUFFLE(3, 1, 3, 1));
      sums[q] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), unit, out->lo[q]),
                                    unit, out->hi[q]);
    }
    out->offset_sums = avx512_block_sums16(sums);
    out->da = _mm512_loadu_ps(ad);
  }
}

// acc + the group's 16 block terms, lane b for block b, of which only the
// first NQ quads hold blocks (a row's last group; the others' sums are 0).
template <int NQ>
inline __m512 block32_fold_group(const Block32WeightGroup& w, const Block32TokenGroup& t,
                                 __m512 acc) {
  __m512i p[4];
  for (int q = 0; q < 4; ++q)
    p[q] = q < NQ
               ? _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w.lo[q], t.lo[q]),
                                     w.hi[q], t.hi[q])
               : _mm512_setzero_si512();
  const __m512i isum = _mm512_sub_epi32(avx512_block_sums16(p), t.offset_sums);
  __m512 term = _mm512_mul_ps(_mm512_mul_ps(w.dw, t.da), _mm512_cvtepi32_ps(isum));
  __asm__("" : "+v"(term));
  return _mm512_add_ps(acc, term);
}

// Weights: kBlockBytes; kOffsetShift; and
//   template <int NQ>
//   static void load_group(const uint8_t* blk, int64_t bytes, Block32WeightGroup& g)
// filling g's first NQ quads and the scales of their blocks (0 for the
// others) from the blocks at blk, of which only the first `bytes` may be read
// (a row's last group: fewer blocks, the rest read as zero bytes).
// For run_register_tiles, on tokens prepared by prepare_token_groups:
// tokens[t * groups + g] for token t of the task.
template <class Weights>
struct Block32Avx512Dot {
  const MatmulTask& task;
  const Block32TokenGroup* tokens;

  static constexpr int64_t kGroupBytes = kBlock32GroupBlocks * Weights::kBlockBytes;

  template <int NR, int NT>
  void tile(int64_t row, int64_t row_step, int64_t t0, float* out) const {
    const int64_t n_blocks = task.cols / 32;
    const int64_t groups = (n_blocks + kBlock32GroupBlocks - 1) / kBlock32GroupBlocks;
    const int64_t full_groups = n_blocks / kBlock32GroupBlocks;
    const uint8_t* w[NR];
    for (int r = 0; r < NR; ++r)
      w[r] = task.weights + (row + r * row_step) * int64_t(task.row_bytes);
    __m512 acc[NR][NT];
    for (int r = 0; r < NR; ++r)
      for (int k = 0; k < NT; ++k) acc[r][k] = _mm512_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      const Block32TokenGroup* t = tokens + t0 * groups + g;
      if (g < full_groups) {
        group<4, NR, NT>(w, g * kGroupBytes, kGroupBytes, t, groups, acc);
        continue;
      }
      const int64_t tail = n_blocks - g * kBlock32GroupBlocks;
      switch ((tail + 3) / 4) {  // quads holding blocks
        case 1:
          group<1, NR, NT>(w, g * kGroupBytes, tail * Weights::kBlockBytes, t, groups, acc);
          break;
        case 2:
          group<2, NR, NT>(w, g * kGroupBytes, tail * Weights::kBlockBytes, t, groups, acc);
          break;
        default:
          group<4, NR, NT>(w, g * kGroupBytes, tail * Weights::kBlockBytes, t, groups, acc);
          break;
      }
    }
    for (int r = 0; r < NR; ++r)
      for (int k = 0; k < NT; ++k) out[r * NT + k] = avx512_hsum(acc[r][k]);
  }

  // One group of NQ quads at byte `at` of every row (of which `bytes` are
  // the row's), for all NT tokens t[k * groups].
  template <int NQ, int NR, int NT>
  static void group(const uint8_t* const (&w)[NR], int64_t at, int64_t bytes,
                    const Block32TokenGroup* t, int64_t groups, __m512 (&acc)[NR][NT]) {
    for (int r = 0; r < NR; ++r) {
      Block32WeightGroup wg;
      Weights::template load_group<NQ>(w[r] + at, bytes, wg);
      for (int k = 0; k < NT; ++k) acc[r][k] = block32_fold_group<NQ>(wg, t[k * groups], acc[r][k]);
    }
  }
};

// The row-range kernel: tokens in blocks (register_tile_loop.h's activation
// blocks; decode: all of them), each block's tokens rearranged into groups
// once per call and thread, then register tiles (decode: 4 row streams) over them.
template <class Weights>
void run_block32_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  constexpr int kRows = kBlock32RowTile, kTokens = kBlock32TokenTile;
  if (r0 >= r1) return;
  // Per thread, reused across calls: at most one activation block of groups.
  thread_local std::vector<Block32TokenGroup> prepared;
  const int64_t n_blocks = task.cols / 32;
  const int64_t groups = (n_blocks + kBlock32GroupBlocks - 1) / kBlock32GroupBlocks;
  const int64_t block_tokens =
      task.n_tokens <= kDecodeTokens ? task.n_tokens : activation_block_tokens(task, kTokens);
  const __m512i unit = _mm512_set1_epi8(char(1 << Weights::kOffsetShift));
  for (int64_t tb = 0; tb < task.n_tokens; tb += block_tokens) {
    MatmulTask part = task;
    part.n_tokens = task.n_tokens - tb < block_tokens ? task.n_tokens - tb : block_tokens;
    part.act_quants = task.act_quants + tb * task.cols;
    part.act_scales = task.act_scales + tb * n_blocks;
    part.y = task.y + tb * task.rows;
    if (prepared.size() < size_t(part.n_tokens * groups))
      prepared.resize(size_t(part.n_tokens * groups));
    for (int64_t t = 0; t < part.n_tokens; ++t)
      prepare_token_groups(part.act_quants + t * task.cols, part.act_scales + t * n_blocks,
                           n_blocks, unit, prepared.data() + t * groups);
    run_register_tiles<kRows, kTokens>(part, r0, r1,
                                       Block32Avx512Dot<Weights>{part, prepared.data()});
  }
}

}  // namespace
}  // namespace kvforge
