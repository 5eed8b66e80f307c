// What the K-quant Tiles16 kernels (Q4_KTiles16, Q6_KTiles16; matmul.h)
// share: the walk over a thread's 16-row groups, tokens in tiles of
// kTilesTokens, each token's activation pairs formed once per call, and
// batches of kPanelMinTokens or more on panels (kquant_panels_avx512.h)
// decoded from the tiles.
//
// A type's Tiles struct gives:
//   kPairs          int32 values per token and super-block that pairs() forms
//   kPanel          its PanelKind
//   pairs(a, out)   out[kPairs] from a token's Q8_K block (its block sums, paired;
//                   IQ4_XS: -128 times its sub-block sums)
//   tokens<NT>(task, g, a, pairs, y)
//                   NT tokens over group g: a[k] and pairs[k] are token k's
//                   blocks and pairs, its 16 row sums go to y + k * task.rows
//   panel(task, g, b, p)  super-block b of group g as a panel
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
          Tiles::template tokens<1>(task, g, a, p, y);
          break;
        case 2:
          Tiles::template tokens<2>(task, g, a, p, y);
          break;
        case 3:
          Tiles::template tokens<3>(task, g, a, p, y);
          break;
        default:
          Tiles::template tokens<4>(task, g, a, p, y);
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
        Tiles::panel(task, row0 / kTiles16Rows, b, p);
      });
}

}  // namespace kvforge
