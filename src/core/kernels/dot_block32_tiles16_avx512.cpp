// IQ4_NL, Q5_0, Q5_1, Q4_1 and MXFP4 weights in their Tiles16 layouts
// (matmul.h, weight_repack.h), AVX-512 VNNI: decode and batches.
//
// One 64-byte register holds 4 levels of each of a group's 16 rows, as
// vpdpbusd's unsigned operand (IQ4_NL, MXFP4: the codebook value or doubled
// E2M1 level + 128 by one byte shuffle of a nibble; Q5_0, Q5_1: the nibble
// with its fifth bit as 16; Q4_1: the nibble), so one vpdpbusd against a
// token's 4 quants broadcast adds 4 products into each row's lane: after a
// block's 8 registers lane n holds row n's exact block sum, with no
// horizontal reduction (IQ4_NL, MXFP4 and Q5_0 start from the token's
// Q8-rows offset, which takes the + 128 / + 16 back out exactly).
//
// The native kernels fold those sums into 16 lanes per row, block b into
// lane b % 16 (block32_fold.h; affine_fold.h with the min term), then a
// fixed tree. Here lane = row, so the 16 fold lanes of a (group, token)
// are 16 registers, S_l in lane n being row n's lane l, and the tree is
// register-wise adds in the same order: the native bits at every token
// count. The 16 registers per (group, token) do not fit a register tile of
// several groups and tokens, so they live in an L1 array (one load, add and
// store per block, group and token; the adds of one lane are 16 blocks
// apart, so their latency hides behind the blocks between). Walking the
// blocks lane class by lane class instead (l, l + 16, ..., one accumulator
// per (group, token), the tree combined as the classes complete) reads the
// blocks out of order and spills the pending tree sums
// (docs/bench/design-measurements.md).
//
// Decode (1 or 2 tokens): 4 groups per tile, one from each quarter of the
// range, 4 long sequential streams, each tile prefetching the streams' next
// groups into L2 a share per block (the hardware prefetchers alone fell
// behind the 4 streams when the weights come from memory). Batches: pairs of groups x 6 tokens, the
// pair's first tile reading from memory and prefetching the next pair into
// L2, as the Q4_0 / Q8_0 tiles do (dot_tiles16_avx512.cpp).
#include "core/formats/iq4_codebook.h"
#include "core/formats/mxfp4.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/matmul_task.h"
#include "core/kernels/tiles16_walk_avx512.h"

namespace kvforge {
namespace {

constexpr int kFoldLanes =
    16;  // block32_fold.h's kBlock32FoldLanes, affine_fold.h's kAffineFoldLanes

// A byte's low nibble, and its high one, as unsigned bytes.
static inline __m512i low_nibbles(__m512i b) { return _mm512_and_si512(b, _mm512_set1_epi8(0x0f)); }
static inline __m512i high_nibbles(__m512i b) {
  return _mm512_and_si512(_mm512_srli_epi16(b, 4), _mm512_set1_epi8(0x0f));
}

// Register k < 8 of a block: levels 4k' + j (k' = k mod 4) of every row for
// k < 4, 16 + 4k' + j after, from the nibble bytes at blk.
static inline __m512i block_nibbles(const uint8_t* blk, int k) {
  const __m512i b = _mm512_loadu_si512(blk + 64 * (k & 3));
  return k < 4 ? low_nibbles(b) : high_nibbles(b);
}

// The fifth bits of register k as 16 in each byte (Q5_0, Q5_1): bit k of
// the fifth-bit byte (k < 4) or bit k (k >= 4) moved to bit 4, then OR-ed in.
static inline __m512i with_fifth_bits(__m512i nibbles, const uint8_t* blk, int k) {
  const __m512i h = _mm512_loadu_si512(blk + kBlock32TileNibbleBytes);
  const __m512i at4 = k < 4 ? _mm512_slli_epi16(h, 4 - k) : k > 4 ? _mm512_srli_epi16(h, k - 4) : h;
  return _mm512_ternarylogic_epi32(nibbles, at4, _mm512_set1_epi8(0x10), 0xf8);  // A | (B & C)
}

// Register k of a block's nibbles looked up in a table of levels + 128.
static inline __m512i looked_up(const LevelsPlus128& levels, const uint8_t* blk, int k) {
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(levels.v)));
  return _mm512_shuffle_epi8(table, block_nibbles(blk, k));
}

// The 16 rows' f16 scales at s, as f32.
struct F16Scales {
  static __m512 scale(const uint8_t* s) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  }
};

// A type's tile: kQuantBytes per block, kScaleBytes of scales per block (d,
// then m when kMin), scale(s) (the rows' d from those bytes, as f32),
// levels(blk, k) (register k as vpdpbusd's unsigned operand), offset(o)
// (from a token's Q8-rows offset, -128 x its block quant sum, to -bias x
// that sum; kOffsets false: no bias, the Q8-blocks form).
struct IQ4_NLTile : F16Scales {
  static constexpr int64_t kQuantBytes = kBlock32TileNibbleBytes;
  static constexpr int64_t kScaleBytes = kTiles16ScaleBytes;
  static constexpr bool kMin = false, kOffsets = true;
  static __m512i levels(const uint8_t* blk, int k) {
    return looked_up(kIq4CodebookPlus128, blk, k);
  }
  static int32_t offset(int32_t o) { return o; }  // level + 128
};

// The scales are E8M0 bytes, turned into e8m0_half's f32 bits.
struct MXFP4Tile {
  static constexpr int64_t kQuantBytes = kBlock32TileNibbleBytes;
  static constexpr int64_t kScaleBytes = kTiles16E8M0Bytes;
  static constexpr bool kMin = false, kOffsets = true;
  static __m512 scale(const uint8_t* s) {
    return avx512_e8m0_half(
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s))));
  }
  static __m512i levels(const uint8_t* blk, int k) {
    return looked_up(kMxfp4LevelsPlus128, blk, k);
  }
  static int32_t offset(int32_t o) { return o; }  // level + 128
};

struct Q5_0Tile : F16Scales {
  static constexpr int64_t kQuantBytes = kBlock32TileNibbleBytes + kBlock32TileFifthBytes;
  static constexpr int64_t kScaleBytes = kTiles16ScaleBytes;
  static constexpr bool kMin = false, kOffsets = true;
  static __m512i levels(const uint8_t* blk, int k) {
    return with_fifth_bits(block_nibbles(blk, k), blk, k);
  }
  static int32_t offset(int32_t o) { return o >> 3; }  // w + 16; exact: o is a multiple of 128
};

struct Q5_1Tile : F16Scales {
  static constexpr int64_t kQuantBytes = kBlock32TileNibbleBytes + kBlock32TileFifthBytes;
  static constexpr int64_t kScaleBytes = 2 * kTiles16ScaleBytes;
  static constexpr bool kMin = true, kOffsets = false;
  static __m512i levels(const uint8_t* blk, int k) {
    return with_fifth_bits(block_nibbles(blk, k), blk, k);
  }
};

struct Q4_1Tile : F16Scales {
  static constexpr int64_t kQuantBytes = kBlock32TileNibbleBytes;
  static constexpr int64_t kScaleBytes = 2 * kTiles16ScaleBytes;
  static constexpr bool kMin = true, kOffsets = false;
  static __m512i levels(const uint8_t* blk, int k) { return block_nibbles(blk, k); }
};

// Pins a vector product to a register, so that it is not fused into the add
// that follows (see block32_fold.h).
static inline __m512 unfused(__m512 v) {
  __asm__("" : "+v"(v));
  return v;
}

// The fold's tree over a (group, token)'s 16 lane registers: block32_fold_lanes
// and affine_fold_lanes (the order of avx512_hsum) lane by lane. Of a row of
// n < 16 blocks the lanes from n on hold +0; no lane or partial sum is ever
// -0 (block32_fold.h), so adding them changes nothing and is skipped.
static inline __m512 fold_tree(const __m512* s, int64_t n) {
  __m512 t[8];
  for (int j = 0; j < 8; ++j) t[j] = j + 8 < n ? _mm512_add_ps(s[j], s[j + 8]) : s[j];
  for (int j = 0; j < 4; ++j) t[j] = j + 4 < n ? _mm512_add_ps(t[j], t[j + 4]) : t[j];
  for (int j = 0; j < 2; ++j) t[j] = j + 2 < n ? _mm512_add_ps(t[j], t[j + 2]) : t[j];
  return n > 1 ? _mm512_add_ps(t[0], t[1]) : t[0];
}

// The block-32 tile: each (group, token)'s fold lanes in L1, summed by
// fold_tree at the end (tiles16_walk_avx512.h walks the groups and tokens).
template <class F>
struct Block32Kernel : Tiles16Kernel<F, true> {
  template <int G, int T>
  [[gnu::noinline]] static void tile(const Tiles16Tile<F, G, T>& c) {
    const TilesView<F>& v = c.v;
    const Tiles16Tile<F, G, T> job = c;
    // The fold's lane sums S_l of each (group, token): [G][T][16] registers.
    // Blocks 0..15 set their lanes to +0 + p_b; lanes no block reaches stay +0.
    alignas(64) __m512 lanes[G][T][kFoldLanes];
    for (int64_t l = v.blocks; l < kFoldLanes; ++l)
      for (int j = 0; j < G; ++j)
        for (int t = 0; t < T; ++t) lanes[j][t][l] = _mm512_setzero_ps();
    for (int64_t b = 0; b < v.blocks; ++b) {
      prefetch_block_share(job.pf, b);
      __m512i isum[G][T];
      for (int t = 0; t < T; ++t) {
        __m512i o = _mm512_setzero_si512();
        if constexpr (F::kOffsets) o = _mm512_set1_epi32(F::offset(job.tok.offsets[t][b]));
        for (int j = 0; j < G; ++j) isum[j][t] = o;
      }
      // Unrolled, so that each register's unpacking is straight-line code with
      // constant shifts (GCC keeps this loop rolled otherwise).
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
#pragma GCC unroll 4
        for (int j = 0; j < G; ++j) {
          const __m512i wv = F::levels(job.w[j] + b * F::kQuantBytes, k);
          for (int t = 0; t < T; ++t)
            isum[j][t] =
                _mm512_dpbusd_epi32(isum[j][t], wv, _mm512_set1_epi32(job.tok.quads[t][8 * b + k]));
        }
      }
      const int l = int(b % kFoldLanes);
      for (int j = 0; j < G; ++j) {
        const uint8_t* scales = v.scales(job.w[j]) + b * F::kScaleBytes;
        const __m512 dw = F::scale(scales);
        const __m512 mw = F::kMin
                              ? _mm512_cvtph_ps(_mm256_loadu_si256(
                                    reinterpret_cast<const __m256i*>(scales + kTiles16ScaleBytes)))
                              : _mm512_setzero_ps();
        for (int t = 0; t < T; ++t) {
          __m512 term =
              unfused(_mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(job.tok.scales[t][b])),
                                    _mm512_cvtepi32_ps(isum[j][t])));
          if constexpr (F::kMin)
            term = _mm512_add_ps(
                term, unfused(_mm512_mul_ps(mw, _mm512_set1_ps(job.tok.block_sums[t][b]))));
          lanes[j][t][l] =
              _mm512_add_ps(b < kFoldLanes ? _mm512_setzero_ps() : lanes[j][t][l], term);
        }
      }
    }
    for (int j = 0; j < G; ++j)
      for (int t = 0; t < T; ++t) _mm512_storeu_ps(job.y(j, t), fold_tree(lanes[j][t], v.blocks));
  }
};

// Every 16-row group whose first row lies in [r0, r1).
template <class F>
void matmul_rows_block32_tiles16(const MatmulTask& task, int64_t r0, int64_t r1) {
  const TilesView<F> v{task, task.cols / 32, kTiles16Rows * int64_t(task.row_bytes)};
  const int64_t g0 = (r0 + kTiles16Rows - 1) / kTiles16Rows,
                g1 = (r1 + kTiles16Rows - 1) / kTiles16Rows;
  if (g0 >= g1) return;
  if (task.n_tokens <= kTiles16DecodeMaxTokens) return tiles16_decode<Block32Kernel<F>>(v, g0, g1);
  tiles16_batch<Block32Kernel<F>>(v, g0, g1, 0, task.n_tokens);
}

}  // namespace

void matmul_rows_iq4_nl_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  matmul_rows_block32_tiles16<IQ4_NLTile>(task, r0, r1);
}

void matmul_rows_q5_0_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  matmul_rows_block32_tiles16<Q5_0Tile>(task, r0, r1);
}

void matmul_rows_q5_1_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  matmul_rows_block32_tiles16<Q5_1Tile>(task, r0, r1);
}

void matmul_rows_q4_1_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  matmul_rows_block32_tiles16<Q4_1Tile>(task, r0, r1);
}

void matmul_rows_mxfp4_tiles16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  matmul_rows_block32_tiles16<MXFP4Tile>(task, r0, r1);
}

}  // namespace kvforge
