// IQ4_NL, Q5_0, Q5_1 and Q4_1 weights in their Tiles16 layouts (matmul.h,
// weight_repack.h), AVX-512 VNNI: decode and batches.
//
// One 64-byte register holds 4 levels of each of a group's 16 rows, as
// vpdpbusd's unsigned operand (IQ4_NL: the codebook value + 128 by one byte
// shuffle of a nibble; Q5_0, Q5_1: the nibble with its fifth bit as 16;
// Q4_1: the nibble), so one vpdpbusd against a token's 4 quants broadcast
// adds 4 products into each row's lane: after a block's 8 registers lane n
// holds row n's exact block sum, with no horizontal reduction (IQ4_NL and
// Q5_0 start from the token's Q8-rows offset, which takes the + 128 / + 16
// back out exactly).
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
// per (group, token), the tree combined as the classes complete) ran
// batches about half as fast (matmul_bench prefill64/512, IQ4_NL and Q5_1,
// Zen 4): the blocks read out of order and the pending tree sums spilled.
//
// Decode (1 or 2 tokens): 4 groups per tile, one from each quarter of the
// range, 4 long sequential streams, each tile prefetching the streams' next
// groups into L2 a share per block (the hardware prefetchers alone fell
// behind the 4 streams when the weights come from memory). Batches: pairs of groups x 6 tokens, the
// pair's first tile reading from memory and prefetching the next pair into
// L2, as the Q4_0 / Q8_0 tiles do (dot_tiles16_avx512.cpp).
#include "core/formats/iq4_codebook.h"
#include "core/kernels/avx512_helpers.h"
#include "core/kernels/matmul_task.h"

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

// A type's tile: kQuantBytes per block, kScaleBytes of scales per block (d,
// then m when kMin), levels(blk, k) (register k as vpdpbusd's unsigned
// operand), offset(o) (from a token's Q8-rows offset, -128 x its block quant
// sum, to -bias x that sum; kOffsets false: no bias, the Q8-blocks form).
struct IQ4_NLTile {
  static constexpr int64_t kQuantBytes = kBlock32TileNibbleBytes;
  static constexpr int64_t kScaleBytes = kTiles16ScaleBytes;
  static constexpr bool kMin = false, kOffsets = true;
  static __m512i levels(const uint8_t* blk, int k) {
    const __m512i table = _mm512_broadcast_i32x4(
        _mm_load_si128(reinterpret_cast<const __m128i*>(kIq4CodebookPlus128.v)));
    return _mm512_shuffle_epi8(table, block_nibbles(blk, k));
  }
  static int32_t offset(int32_t o) { return o; }  // level + 128
};

struct Q5_0Tile {
  static constexpr int64_t kQuantBytes = kBlock32TileNibbleBytes + kBlock32TileFifthBytes;
  static constexpr int64_t kScaleBytes = kTiles16ScaleBytes;
  static constexpr bool kMin = false, kOffsets = true;
  static __m512i levels(const uint8_t* blk, int k) {
    return with_fifth_bits(block_nibbles(blk, k), blk, k);
  }
  static int32_t offset(int32_t o) { return o >> 3; }  // w + 16; exact: o is a multiple of 128
};

struct Q5_1Tile {
  static constexpr int64_t kQuantBytes = kBlock32TileNibbleBytes + kBlock32TileFifthBytes;
  static constexpr int64_t kScaleBytes = 2 * kTiles16ScaleBytes;
  static constexpr bool kMin = true, kOffsets = false;
  static __m512i levels(const uint8_t* blk, int k) {
    return with_fifth_bits(block_nibbles(blk, k), blk, k);
  }
};

struct Q4_1Tile {
  static constexpr int64_t kQuantBytes = kBlock32TileNibbleBytes;
  static constexpr int64_t kScaleBytes = 2 * kTiles16ScaleBytes;
  static constexpr bool kMin = true, kOffsets = false;
  static __m512i levels(const uint8_t* blk, int k) { return block_nibbles(blk, k); }
};

template <class F>
struct TilesView {
  const MatmulTask& task;
  int64_t blocks;       // cols / 32
  int64_t group_bytes;  // 16 rows

  const uint8_t* group(int64_t g) const { return task.weights + g * group_bytes; }
  const uint8_t* scales(const uint8_t* group) const { return group + blocks * F::kQuantBytes; }
};

// Cache lines a tile prefetches into L2 while it runs (dot_tiles16_avx512.cpp):
// `lines` lines from each of the first `streams` addresses, `per_block` of
// them per block of 32 columns, so they spread over the tile's arithmetic.
struct TilePrefetch {
  const uint8_t* first[4] = {};
  int streams = 0;
  int64_t lines = 0;
  int64_t per_block = 0;
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

// G groups (their indices in `groups`) x T tokens from t0; results to y.
template <class F, int G, int T>
void tile(const TilesView<F>& v, const int64_t* groups, int64_t t0, const TilePrefetch& pf = {}) {
  const MatmulTask& task = v.task;
  const uint8_t* w[G];
  for (int j = 0; j < G; ++j) w[j] = v.group(groups[j]);
  const int32_t* a[T];
  const float* da[T];
  const int32_t* off[T];
  const float* sa[T];
  for (int t = 0; t < T; ++t) {
    a[t] = reinterpret_cast<const int32_t*>(task.act_quants + (t0 + t) * task.cols);
    da[t] = task.act_scales + (t0 + t) * v.blocks;
    if constexpr (F::kOffsets) off[t] = task.act_offsets + (t0 + t) * v.blocks;
    if constexpr (F::kMin) sa[t] = task.act_block_sums + (t0 + t) * v.blocks;
  }
  // The fold's lane sums S_l of each (group, token): [G][T][16] registers.
  // Blocks 0..15 set their lanes to +0 + p_b; lanes no block reaches stay +0.
  alignas(64) __m512 lanes[G][T][kFoldLanes];
  for (int64_t l = v.blocks; l < kFoldLanes; ++l)
    for (int j = 0; j < G; ++j)
      for (int t = 0; t < T; ++t) lanes[j][t][l] = _mm512_setzero_ps();
  for (int64_t b = 0; b < v.blocks; ++b) {
    const int64_t pf_end = (b + 1) * pf.per_block < pf.lines ? (b + 1) * pf.per_block : pf.lines;
    for (int i = 0; i < pf.streams; ++i)
      for (int64_t l = b * pf.per_block; l < pf_end; ++l)
        _mm_prefetch(reinterpret_cast<const char*>(pf.first[i] + 64 * l), _MM_HINT_T1);
    __m512i isum[G][T];
    for (int t = 0; t < T; ++t) {
      __m512i o = _mm512_setzero_si512();
      if constexpr (F::kOffsets) o = _mm512_set1_epi32(F::offset(off[t][b]));
      for (int j = 0; j < G; ++j) isum[j][t] = o;
    }
    // Unrolled, so that each register's unpacking is straight-line code with
    // constant shifts (GCC keeps this loop rolled otherwise).
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
#pragma GCC unroll 4
      for (int j = 0; j < G; ++j) {
        const __m512i wv = F::levels(w[j] + b * F::kQuantBytes, k);
        for (int t = 0; t < T; ++t)
          isum[j][t] = _mm512_dpbusd_epi32(isum[j][t], wv, _mm512_set1_epi32(a[t][8 * b + k]));
      }
    }
    const int l = int(b % kFoldLanes);
    for (int j = 0; j < G; ++j) {
      const uint8_t* scales = v.scales(w[j]) + b * F::kScaleBytes;
      const __m512 dw =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
      const __m512 mw = F::kMin
                            ? _mm512_cvtph_ps(_mm256_loadu_si256(
                                  reinterpret_cast<const __m256i*>(scales + kTiles16ScaleBytes)))
                            : _mm512_setzero_ps();
      for (int t = 0; t < T; ++t) {
        __m512 term = unfused(_mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(da[t][b])),
                                            _mm512_cvtepi32_ps(isum[j][t])));
        if constexpr (F::kMin)
          term = _mm512_add_ps(term, unfused(_mm512_mul_ps(mw, _mm512_set1_ps(sa[t][b]))));
        lanes[j][t][l] = _mm512_add_ps(b < kFoldLanes ? _mm512_setzero_ps() : lanes[j][t][l], term);
      }
    }
  }
  for (int j = 0; j < G; ++j)
    for (int t = 0; t < T; ++t)
      _mm512_storeu_ps(task.y + (t0 + t) * task.rows + groups[j] * kTiles16Rows,
                       fold_tree(lanes[j][t], v.blocks));
}

// A tile of G groups and a run-time nt <= T tokens.
template <class F, int G, int T>
void tile_upto(const TilesView<F>& v, const int64_t* groups, int64_t t0, int nt,
               const TilePrefetch& pf = {}) {
  if constexpr (T > 1) {
    if (nt < T) return tile_upto<F, G, T - 1>(v, groups, t0, nt, pf);
  }
  tile<F, G, T>(v, groups, t0, pf);
}

// Decode (1 or 2 tokens: kTiles16DecodeMaxTokens): 4 groups per tile, one
// from each quarter of the range.
template <class F>
void decode(const TilesView<F>& v, int64_t g0, int64_t g1) {
  const int nt = int(v.task.n_tokens);
  const int64_t stream = (g1 - g0) / 4;
  const int64_t lines = v.group_bytes / 64;
  for (int64_t i = 0; i < stream; ++i) {
    const int64_t groups[4] = {g0 + i, g0 + i + stream, g0 + i + 2 * stream, g0 + i + 3 * stream};
    TilePrefetch pf{{}, 0, lines, (lines + v.blocks - 1) / v.blocks};
    if (i + 1 < stream) {  // each stream's next group, into L2 while this one runs
      pf.streams = 4;
      for (int q = 0; q < 4; ++q) pf.first[q] = v.group(groups[q] + 1);
    }
    tile_upto<F, 4, 2>(v, groups, 0, nt, pf);
  }
  for (int64_t g = g0 + 4 * stream; g < g1; ++g) tile_upto<F, 1, 2>(v, &g, 0, nt);
}

// Tokens [t0, t1) of groups [g0, g1): pairs of groups x 6 tokens; each
// pair's tiles prefetch the next pair into L2, a share each.
template <class F>
void batch(const TilesView<F>& v, int64_t g0, int64_t g1, int64_t t0, int64_t t1) {
  constexpr int kTokens = 6;
  const int64_t tiles = (t1 - t0 + kTokens - 1) / kTokens;
  const int64_t n_groups = v.task.rows / kTiles16Rows;
  int64_t g = g0;
  for (; g + 2 <= g1; g += 2) {
    const int64_t groups[2] = {g, g + 1};
    const int64_t next_groups = n_groups - g - 2 < 2 ? n_groups - g - 2 : 2;
    const int64_t next_lines = (next_groups * v.group_bytes + 63) / 64;
    const int64_t tile_lines = (next_lines + tiles - 1) / tiles;
    TilePrefetch pf{{v.group(g + 2)}, 1, 0, (tile_lines + v.blocks - 1) / v.blocks};
    for (int64_t t = t0; t < t1; t += kTokens) {
      const int64_t left = next_lines - (t - t0) / kTokens * tile_lines;
      pf.lines = left < 0 ? 0 : left < tile_lines ? left : tile_lines;
      tile_upto<F, 2, kTokens>(v, groups, t, int(t1 - t < kTokens ? t1 - t : kTokens), pf);
      pf.first[0] += 64 * tile_lines;
    }
  }
  for (; g < g1; ++g)
    for (int64_t t = t0; t < t1; t += kTokens)
      tile_upto<F, 1, kTokens>(v, &g, t, int(t1 - t < kTokens ? t1 - t : kTokens));
}

// Every 16-row group whose first row lies in [r0, r1).
template <class F>
void matmul_rows_block32_tiles16(const MatmulTask& task, int64_t r0, int64_t r1) {
  const TilesView<F> v{task, task.cols / 32, kTiles16Rows * int64_t(task.row_bytes)};
  const int64_t g0 = (r0 + kTiles16Rows - 1) / kTiles16Rows,
                g1 = (r1 + kTiles16Rows - 1) / kTiles16Rows;
  if (g0 >= g1) return;
  if (task.n_tokens <= kTiles16DecodeMaxTokens) return decode(v, g0, g1);
  batch(v, g0, g1, 0, task.n_tokens);
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

}  // namespace kvforge
