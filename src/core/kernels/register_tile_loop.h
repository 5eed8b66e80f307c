// The loop of the register-blocked kernels: each step computes a tile of up
// to kRows weight rows x kTokens tokens at once, so every weight vector loaded
// serves kTokens tokens and every activation vector serves kRows rows, from
// registers. Rows go in blocks small enough to stay in L1 (as in
// tile_loop.h); for each block every token tile in turn, rows in groups of
// kRows, the last group of a block smaller when its rows run out.
//
// Dot must provide
//   template <int NR, int NT> void tile(int64_t row, int64_t row_step, int64_t t0, float* out)
//   const
// computing out[r * NT + k] = dot(weight row `row + r * row_step`, token t0 + k) for
// r < NR, k < NT. Each (row, token) must be computed with the same
// operations in the same order whatever NR and NT are, so results do not
// depend on n_tokens, tiling or threads (matmul.h's contract).
//
// Included by the *_avx2.cpp / *_avx512.cpp files: it uses no library
// functions, and its instantiations (with kernel types from those files'
// anonymous namespaces) have internal linkage.
#pragma once

#include <xmmintrin.h>

#include <cstdint>

#include "core/kernels/matmul_task.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Runs the NR x nt tile at (row, t0) for a run-time nt <= NT, then stores it.
template <int NR, int NT, class Dot>
void run_register_tile(const MatmulTask& task, int64_t row, int64_t t0, int nt, const Dot& dot,
                       int64_t row_step = 1) {
  if constexpr (NT > 1) {
    if (nt < NT) {
      run_register_tile<NR, NT - 1>(task, row, t0, nt, dot, row_step);
      return;
    }
  }
  float out[NR * NT];
  dot.template tile<NR, NT>(row, row_step, t0, out);
  for (int k = 0; k < NT; ++k) {
    float* y = task.y + (t0 + k) * task.rows + row;
    for (int r = 0; r < NR; ++r) y[r * row_step] = out[r * NT + k];
  }
}

// The last rows of a block, fewer than NR: a tile with as many rows as are left.
template <int NR, int NT, class Dot>
void run_partial_row_tile(const MatmulTask& task, int64_t row, int nr, int64_t t0, int nt,
                          const Dot& dot) {
  if constexpr (NR > 1) {
    if (nr < NR) {
      run_partial_row_tile<NR - 1, NT>(task, row, nr, t0, nt, dot);
      return;
    }
  }
  run_register_tile<NR, NT>(task, row, t0, nt, dot);
}

// Activations of this many bytes per call stay in L2 next to the weights of a thread's rows: long
// prefills go through the rows once per block of tokens of this size.
inline constexpr int64_t kActivationBlockBytes = 256 * 1024;

// Tokens per activation block: a multiple of the token tile, at least one tile.
// (Q8 activations: quants plus, in the AVX-512 layout, 2 x 64 bytes of scales
// and sums per 128 quants; counted as 2 bytes per value at every level.)
static inline int64_t activation_block_tokens(const MatmulTask& task, int64_t tile_tokens) {
  const int64_t bytes_per_token =
      task.act_quants ? 2 * task.cols : task.cols * int64_t(sizeof(float));
  const int64_t tokens = bytes_per_token > 0 ? kActivationBlockBytes / bytes_per_token : 0;
  return tokens < tile_tokens ? tile_tokens : tokens / tile_tokens * tile_tokens;
}

template <int kRows, int kTokens, class Dot>
void run_register_tiles_shaped(const MatmulTask& task, int64_t r0, int64_t r1, const Dot& dot) {
  static_assert(kRows >= 1 && kTokens >= 1, "tiles have at least one row and one token");
  int64_t rows_per_block = kRowBlockBytes / int64_t(task.row_bytes);
  rows_per_block = rows_per_block < kRows ? kRows : rows_per_block / kRows * kRows;
  const int64_t tokens_per_block = activation_block_tokens(task, kTokens);
  for (int64_t tb = 0; tb < task.n_tokens; tb += tokens_per_block) {
    const int64_t te =
        tb + tokens_per_block < task.n_tokens ? tb + tokens_per_block : task.n_tokens;
    const int64_t n_tiles = (te - tb + kTokens - 1) / kTokens;
    for (int64_t rb = r0; rb < r1; rb += rows_per_block) {
      const int64_t re = rb + rows_per_block < r1 ? rb + rows_per_block : r1;
      // With several token tiles per block (batched decode, prefill), the next
      // row block streams in from memory while this one computes: each tile
      // prefetches its share of the next block's lines. A single tile
      // (decode) gains nothing from it: the hardware prefetcher already
      // follows one row stream.
      const int64_t next_end = re + rows_per_block < r1 ? re + rows_per_block : r1;
      const uint8_t* next = task.weights + re * int64_t(task.row_bytes);
      const int64_t next_lines = n_tiles > 1 ? (next_end - re) * int64_t(task.row_bytes) / 64 : 0;
      int64_t tile = 0;
      for (int64_t t0 = tb; t0 < te; t0 += kTokens, ++tile) {
        const int nt = te - t0 < kTokens ? int(te - t0) : kTokens;
        for (int64_t l = tile * next_lines / n_tiles; l < (tile + 1) * next_lines / n_tiles; ++l)
          _mm_prefetch(reinterpret_cast<const char*>(next + 64 * l), _MM_HINT_T0);
        int64_t r = rb;
        for (; r + kRows <= re; r += kRows) run_register_tile<kRows, kTokens>(task, r, t0, nt, dot);
        if constexpr (kRows > 1) {
          if (r < re) run_partial_row_tile<kRows - 1, kTokens>(task, r, int(re - r), t0, nt, dot);
        }
      }
    }
  }
}

// One or two tokens (decode): kDecodeRows rows per
// tile that lie far apart, one from each quarter of [r0, r1), so the tile
// reads 4 long sequential streams (adjacent rows interleaved at this step
// read slower from DRAM than a single row) and
// still loads each activation vector once per 4 rows. Rows left over
// when the range does not split evenly go one at a time. Row grouping does
// not change any result, so the choice is free: a kernel may ask for more
// streams (kStreams; the F16 kernel takes 8).
inline constexpr int kDecodeRows = 4;
inline constexpr int kDecodeTokens = 2;  // at most: 4 x 2 accumulators

template <int kRows, int kTokens, class Dot, int kStreams = kDecodeRows>
void run_register_tiles(const MatmulTask& task, int64_t r0, int64_t r1, const Dot& dot) {
  if (task.n_tokens > kDecodeTokens) {
    run_register_tiles_shaped<kRows, kTokens>(task, r0, r1, dot);
    return;
  }
  const int nt = int(task.n_tokens);
  const int64_t stream = (r1 - r0) / kStreams;  // rows per stream
  for (int64_t i = 0; i < stream; ++i)
    run_register_tile<kStreams, kDecodeTokens>(task, r0 + i, 0, nt, dot, stream);
  for (int64_t r = r0 + kStreams * stream; r < r1; ++r)
    run_register_tile<1, kDecodeTokens>(task, r, 0, nt, dot);
}

}  // namespace kvforge
