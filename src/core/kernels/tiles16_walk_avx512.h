// The one walk of the block-32 Tiles16 kernels (Q8_0 / Q4_0:
// dot_tiles16_avx512.cpp; IQ4_NL, Q5_0, Q5_1, Q4_1, MXFP4:
// dot_block32_tiles16_avx512.cpp) over a thread's 16-row groups and the
// tokens: which groups and tokens go into each register tile, and which
// cache lines each tile prefetches. A kernel supplies only the tile:
//   Quants, kDecodePrefetch  from Tiles16Kernel<Quants, kDecodePrefetch>:
//                          the type's quant struct (kQuantBytes per block);
//                          whether decode tiles prefetch each stream's next
//                          group
//   Kernel::tile<G, T>(tile)
//                          the G groups x T tokens of `tile` (Tiles16Tile),
//                          results to tile.y(j, t), prefetching tile.pf a
//                          share per block; [[gnu::noinline]], so each
//                          tile shape has the registers to itself instead of
//                          sharing them with the walk it would be inlined
//                          into (docs/bench/design-measurements.md), and
//                          working on a local copy of `tile`, whose pointers
//                          then stay in registers across the blocks
//
// For the ISA-flagged kernel files only: everything here has internal
// linkage (see core/cpu_features.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/kernels/matmul_task.h"

namespace kvforge {
namespace {

template <class Q>
struct TilesView {
  const MatmulTask& task;
  int64_t blocks;       // cols / 32
  int64_t group_bytes;  // 16 rows

  const uint8_t* group(int64_t g) const { return task.weights + g * group_bytes; }
  const uint8_t* scales(const uint8_t* group) const { return group + blocks * Q::kQuantBytes; }
};

// Cache lines a tile prefetches into L2 while it runs: `lines` lines from
// each of the first `streams` addresses, `per_block` of them per block of 32
// columns, so they spread over the tile's arithmetic.
struct TilePrefetch {
  const uint8_t* first[4] = {};
  int streams = 0;
  int64_t lines = 0;
  int64_t per_block = 0;
};

template <class Q, bool kPrefetchNextGroups>
struct Tiles16Kernel {
  using Quants = Q;
  static constexpr bool kDecodePrefetch = kPrefetchNextGroups;
};

// Block b's share of pf.
inline void prefetch_block_share(const TilePrefetch& pf, int64_t b) {
  const int64_t end = (b + 1) * pf.per_block < pf.lines ? (b + 1) * pf.per_block : pf.lines;
  for (int i = 0; i < pf.streams; ++i)
    for (int64_t l = b * pf.per_block; l < end; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(pf.first[i] + 64 * l), _MM_HINT_T1);
}

// Token t0 + t's Q8 rows (matmul_task.h) for a tile of T tokens.
template <int T>
struct TileTokens {
  const int32_t* quads[T];     // its quants, 4 per int32
  const float* scales[T];      // [blocks]
  const int32_t* offsets[T];   // [blocks] (Q8 rows)
  const float* block_sums[T];  // [blocks] (Q8 blocks)
  TileTokens(const MatmulTask& task, int64_t blocks, int64_t t0) {
    for (int t = 0; t < T; ++t) {
      quads[t] = reinterpret_cast<const int32_t*>(task.act_quants + (t0 + t) * task.cols);
      scales[t] = task.act_scales + (t0 + t) * blocks;
      offsets[t] = task.act_offsets ? task.act_offsets + (t0 + t) * blocks : nullptr;
      block_sums[t] = task.act_block_sums ? task.act_block_sums + (t0 + t) * blocks : nullptr;
    }
  }
};

// G groups (their indices in `groups`) x T tokens from t0: what a kernel's
// tile reads and where it writes.
template <class Q, int G, int T>
struct Tiles16Tile {
  const TilesView<Q>& v;
  const int64_t* groups;
  int64_t t0;
  const TilePrefetch& pf;
  const uint8_t* w[G];  // each group's first byte
  TileTokens<T> tok;

  Tiles16Tile(const TilesView<Q>& view, const int64_t* g, int64_t first_token,
              const TilePrefetch& prefetch)
      : v(view), groups(g), t0(first_token), pf(prefetch), tok(view.task, view.blocks, t0) {
    for (int j = 0; j < G; ++j) w[j] = v.group(groups[j]);
  }
  // Token t's 16 results of group j.
  float* y(int j, int t) const {
    return v.task.y + (t0 + t) * v.task.rows + groups[j] * kTiles16Rows;
  }
};

// A tile of G groups and a run-time nt <= T tokens.
template <class Kernel, int G, int T>
void tile_up_to(const TilesView<typename Kernel::Quants>& v, const int64_t* groups, int64_t t0,
                int nt, const TilePrefetch& pf = {}) {
  if constexpr (T > 1) {
    if (nt < T) return tile_up_to<Kernel, G, T - 1>(v, groups, t0, nt, pf);
  }
  Kernel::template tile<G, T>(Tiles16Tile<typename Kernel::Quants, G, T>(v, groups, t0, pf));
}

// Decode (1 or 2 tokens: kTiles16DecodeMaxTokens): 4 groups per tile, one
// from each quarter of the range, so a tile reads 4 long sequential streams
// (as register_tile_loop.h does for the other layouts).
template <class Kernel>
void tiles16_decode(const TilesView<typename Kernel::Quants>& v, int64_t g0, int64_t g1) {
  const int nt = int(v.task.n_tokens);
  const int64_t stream = (g1 - g0) / 4;
  const int64_t lines = v.group_bytes / 64;
  for (int64_t i = 0; i < stream; ++i) {
    const int64_t groups[4] = {g0 + i, g0 + i + stream, g0 + i + 2 * stream, g0 + i + 3 * stream};
    TilePrefetch pf{{}, 0, lines, (lines + v.blocks - 1) / v.blocks};
    if (Kernel::kDecodePrefetch && i + 1 < stream) {  // each stream's next group, into L2
      pf.streams = 4;
      for (int q = 0; q < 4; ++q) pf.first[q] = v.group(groups[q] + 1);
    }
    tile_up_to<Kernel, 4, 2>(v, groups, 0, nt, pf);
  }
  for (int64_t g = g0 + 4 * stream; g < g1; ++g) tile_up_to<Kernel, 1, 2>(v, &g, 0, nt);
}

// Tokens [t0, t1) of groups [g0, g1): pairs of groups x 6 tokens (12
// accumulators and 12 block sums in registers; docs/bench/design-measurements.md
// compares the shapes). A pair's first tile reads its weights from memory,
// the others from L1; the tiles of each pair prefetch the next pair into L2,
// a share each, so that first tile does not wait on DRAM (the hardware
// prefetchers follow the pair's stream only once it starts).
template <class Kernel>
void tiles16_batch(const TilesView<typename Kernel::Quants>& v, int64_t g0, int64_t g1, int64_t t0,
                   int64_t t1) {
  constexpr int kTokens = 6;
  const int64_t tiles = (t1 - t0 + kTokens - 1) / kTokens;
  // Past g1 too: the next piece of a thread's rows usually starts there
  // (matmul_batch's Stealing split).
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
      tile_up_to<Kernel, 2, kTokens>(v, groups, t, int(t1 - t < kTokens ? t1 - t : kTokens), pf);
      pf.first[0] += 64 * tile_lines;
    }
  }
  for (; g < g1; ++g)
    for (int64_t t = t0; t < t1; t += kTokens)
      tile_up_to<Kernel, 1, kTokens>(v, &g, t, int(t1 - t < kTokens ? t1 - t : kTokens));
}

}  // namespace
}  // namespace kvforge
