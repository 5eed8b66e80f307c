// The one driver of the K-quant and IQ4_XS Tiles16 kernels (Q2_K .. Q6_K,
// IQ4_XS Tiles16; matmul.h): the walk over a thread's 16-row groups, tokens
// in tiles of kTilesTokens, each token's activation pairs formed once per
// call, the super-blocks of a group summed into one register per token, and
// batches of kPanelMinTokens or more on panels (kquant_panels_avx512.h)
// decoded from the tiles.
//
// A type's Tiles struct, derived from KquantTilesShape, gives only its
// super-block math:
//   kPairs          int32 values per token and super-block that pairs() forms
//   kPanel          its PanelKind
//   kTileBytes      bytes of one super-block's tile (16 rows)
//   kSeparateD      true: a group's d (16 f16 per super-block) follow all the
//                   tiles of the matrix; false: inside each tile
//   pairs(a, out)   out[kPairs] from a token's Q8_K block (its block sums, paired;
//                   IQ4_XS: -128 times its sub-block sums)
//   block<NT>(t, a, pairs, b, acc)
//                   adds super-block b (its tile t.tile, d t.d when kSeparateD)
//                   to NT tokens' 16 row sums acc[k]: a[k] and pairs[k] are
//                   token k's blocks and pairs
//   panel(t, p)     the super-block's tile as a panel
//
// `static`: each including kernel file gets its own copy (see avx512_helpers.h).
#pragma once

#include <cstdint>

#include "core/formats/q8_k.h"
#include "core/kernels/kquant_panels_avx512.h"
#include "core/kernels/matmul_task.h"
#include "core/kernels/thread_scratch.h"

namespace kvforge {

inline constexpr int kTilesTokens = 4;  // tokens per pass over a group's bytes

// The constants of a Tiles struct (above).
template <int kPairsPerBlock, PanelKind kPanelKind, int64_t kBytes, bool kDAfterTiles,
          void (*kPairsOf)(const BlockQ8_K&, int32_t*)>
struct KquantTilesShape {
  static constexpr int kPairs = kPairsPerBlock;
  static constexpr PanelKind kPanel = kPanelKind;
  static constexpr int64_t kTileBytes = kBytes;
  static constexpr bool kSeparateD = kDAfterTiles;
  static void pairs(const BlockQ8_K& a, int32_t* out) { kPairsOf(a, out); }
};

// One super-block of a group: its tile and, for kSeparateD types, its d.
struct KquantTile {
  const uint8_t* tile;
  const uint16_t* d;
};

// Super-block b of group g.
template <class Tiles>
static inline KquantTile kquant_tile(const MatmulTask& task, int64_t g, int64_t b) {
  const int64_t n_sb = task.cols / 256;
  const uint8_t* tiles = task.weights + g * n_sb * Tiles::kTileBytes;
  if constexpr (!Tiles::kSeparateD) return {tiles + b * Tiles::kTileBytes, nullptr};
  const auto* d = reinterpret_cast<const uint16_t*>(task.weights + task.rows / kTiles16Rows * n_sb *
                                                                       Tiles::kTileBytes);
  return {tiles + b * Tiles::kTileBytes, d + (g * n_sb + b) * kTiles16Rows};
}

// NT tokens over group g: token k's 16 row sums to y + k * task.rows.
template <class Tiles, int NT>
static void kquant_tile_tokens(const MatmulTask& task, int64_t g, const BlockQ8_K* const* a,
                               const int32_t* const* pairs, float* y) {
  __m512 acc[NT];
  for (int k = 0; k < NT; ++k) acc[k] = _mm512_setzero_ps();
  const int64_t n_sb = task.cols / 256;
  for (int64_t b = 0; b < n_sb; ++b)
    Tiles::template block<NT>(kquant_tile<Tiles>(task, g, b), a, pairs, b, acc);
  for (int k = 0; k < NT; ++k) _mm512_storeu_ps(y + k * task.rows, acc[k]);
}

template <class Tiles>
static void kquant_tiles16_groups(const MatmulTask& task, int64_t g0, int64_t g1) {
  const int64_t n_sb = task.cols / 256;
  const int64_t nt = task.n_tokens;
  // [n_tokens][n_sb][kPairs], read by every group.
  auto* pairs = reinterpret_cast<int32_t*>(thread_scratch(size_t(nt * n_sb * Tiles::kPairs) * 4));
  for (int64_t i = 0; i < nt * n_sb; ++i) Tiles::pairs(task.act_k[i], pairs + i * Tiles::kPairs);
  for (int64_t g = g0; g < g1; ++g) {
    for (int64_t t0 = 0; t0 < nt; t0 += kTilesTokens) {
      const BlockQ8_K* a[kTilesTokens];
      const int32_t* p[kTilesTokens];
      const int n = int(nt - t0 < kTilesTokens ? nt - t0 : kTilesTokens);
      for (int k = 0; k < n; ++k) {
        a[k] = task.act_k + (t0 + k) * n_sb;
        p[k] = pairs + (t0 + k) * n_sb * Tiles::kPairs;
      }
      float* y = task.y + t0 * task.rows + g * kTiles16Rows;
      switch (n) {
        case 1:
          kquant_tile_tokens<Tiles, 1>(task, g, a, p, y);
          break;
        case 2:
          kquant_tile_tokens<Tiles, 2>(task, g, a, p, y);
          break;
        case 3:
          kquant_tile_tokens<Tiles, 3>(task, g, a, p, y);
          break;
        default:
          kquant_tile_tokens<Tiles, 4>(task, g, a, p, y);
          break;
      }
    }
  }
}

// Every 16-row group whose first row lies in [r0, r1).
template <class Tiles>
static void run_kquant_tiles16(const MatmulTask& task, int64_t r0, int64_t r1) {
  const int64_t g0 = (r0 + kTiles16Rows - 1) / kTiles16Rows,
                g1 = (r1 + kTiles16Rows - 1) / kTiles16Rows;
  if (g0 >= g1) return;
  if (!kquant_panels_pay(task)) return kquant_tiles16_groups<Tiles>(task, g0, g1);
  run_kquant_panel_rows<Tiles::kPanel>(
      task, g0 * kTiles16Rows, g1 * kTiles16Rows,
      [&](int64_t row0, int64_t b, KquantPanelBlock& p, KquantPanelRow*) {
        Tiles::panel(kquant_tile<Tiles>(task, row0 / kTiles16Rows, b), p);
      });
}

}  // namespace kvforge
