// The loop every row-range kernel shares: output rows in blocks small enough
// to stay in L1, and for each block every token tile in turn, so each weight
// row is read from memory once per call and reused from cache for all tokens.
//
// Dot must provide   template <int NT> void tile(int64_t row, int64_t t0, float* out) const
// computing out[k] = dot(weight row `row`, token t0 + k) for k < NT. A tile
// must compute each token exactly as it would alone (same operations in the
// same order), so results do not depend on n_tokens, tiling or threads.
//
// Included by the *_avx2.cpp / *_avx512.cpp files: it uses no library
// functions, and its instantiations (with kernel types from those files'
// anonymous namespaces) have internal linkage.
#pragma once

#include <cstdint>

#include "core/kernels/matmul_task.h"

namespace kvforge {

// Row `row` of the task's weights, as its blocks.
template <class Block>
static inline const Block* weight_row(const MatmulTask& task, int64_t row) {
  return reinterpret_cast<const Block*>(task.weights + row * int64_t(task.row_bytes));
}

// The Q8_K activations of tokens t0 .. t0 + NT - 1, each n_blocks long:
// a[k] is token t0 + k's.
template <int NT>
static inline void q8_k_token_rows(const MatmulTask& task, int64_t t0, int64_t n_blocks,
                                   const BlockQ8_K* a[NT]) {
  for (int k = 0; k < NT; ++k) a[k] = task.act_k + (t0 + k) * n_blocks;
}

// Block b of tokens t0 .. t0 + NT - 1, in each activation form the block
// kernels read (matmul_task.h).
struct TokenBlocks {
  const MatmulTask& task;
  int64_t t0, b, n_blocks, block_elems;

  const BlockQ8_K& q8_k(int k) const { return task.act_k[(t0 + k) * n_blocks + b]; }
  const int8_t* q8(int k) const { return task.act_quants + (t0 + k) * task.cols + b * block_elems; }
  float q8_scale(int k) const { return task.act_scales[(t0 + k) * n_blocks + b]; }
};

// Weight row `row` x NT tokens, the row's blocks in order: out[k] is the
// sum that add(blk, b, n_blocks, acc) builds in acc[k], starting from 0.
template <int NT, class Block, class AddBlock>
static inline void sum_row_blocks(const MatmulTask& task, int64_t row, float* out,
                                  const AddBlock& add) {
  const Block* w = weight_row<Block>(task, row);
  const int64_t n_blocks = task.cols / Block::kElems;
  float acc[NT] = {};
  for (int64_t b = 0; b < n_blocks; ++b) add(w[b], b, n_blocks, acc);
  for (int k = 0; k < NT; ++k) out[k] = acc[k];
}

// The row tile of a kernel that takes a row block by block: weight row
// `row` x NT tokens from t0, the blocks in order, each token's running sum
// acc[k] updated by the format's add_block<NT>(blk, tokens, acc) (found by
// argument-dependent lookup: `static` in namespace kvforge, next to the
// kernel), which must apply the same operations to each token alone.
template <class Block>
struct BlockRowDot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    sum_row_blocks<NT, Block>(task, row, out,
                              [&](const Block& blk, int64_t b, int64_t n, float* acc) {
                                add_block<NT>(blk, TokenBlocks{task, t0, b, n, Block::kElems}, acc);
                              });
  }
};

// The row tile of a K-quant kernel (Q8_K activations) that takes a row
// super-block by super-block: Math::add_block<NT>(blk, a, b, acc) adds
// super-block b of the row (blk) against a[k][b] to acc[k] for each token
// k < NT, with the same operations for each token alone. Math's members
// hold the constants its block math reuses.
template <class Block, class Math>
struct KquantRowDot {
  const MatmulTask& task;
  Math math = {};

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const BlockQ8_K* a[NT];
    q8_k_token_rows<NT>(task, t0, task.cols / Block::kElems, a);
    sum_row_blocks<NT, Block>(task, row, out,
                              [&](const Block& blk, int64_t b, int64_t, float* acc) {
                                math.template add_block<NT>(blk, a, b, acc);
                              });
  }
};

// Weight bytes per row block: half of a 32 KiB L1, leaving room for activations.
inline constexpr int64_t kRowBlockBytes = 16 * 1024;

template <int kMaxTile, class Dot>
void run_row_tiles(const MatmulTask& task, int64_t r0, int64_t r1, const Dot& dot) {
  static_assert(kMaxTile >= 1 && kMaxTile <= 8, "tile sizes 1..8 are dispatched below");
  int64_t rows_per_block = kRowBlockBytes / int64_t(task.row_bytes);
  if (rows_per_block < 1) rows_per_block = 1;
  float out[kMaxTile];
  for (int64_t rb = r0; rb < r1; rb += rows_per_block) {
    const int64_t re = rb + rows_per_block < r1 ? rb + rows_per_block : r1;
    for (int64_t t0 = 0; t0 < task.n_tokens; t0 += kMaxTile) {
      const int64_t left = task.n_tokens - t0;
      const int nt = left < kMaxTile ? int(left) : kMaxTile;
      for (int64_t r = rb; r < re; ++r) {
        switch (nt) {
          case 1:
            dot.template tile<1>(r, t0, out);
            break;
          case 2:
            if constexpr (kMaxTile >= 2) dot.template tile<2>(r, t0, out);
            break;
          case 3:
            if constexpr (kMaxTile >= 3) dot.template tile<3>(r, t0, out);
            break;
          case 4:
            if constexpr (kMaxTile >= 4) dot.template tile<4>(r, t0, out);
            break;
          case 5:
            if constexpr (kMaxTile >= 5) dot.template tile<5>(r, t0, out);
            break;
          case 6:
            if constexpr (kMaxTile >= 6) dot.template tile<6>(r, t0, out);
            break;
          case 7:
            if constexpr (kMaxTile >= 7) dot.template tile<7>(r, t0, out);
            break;
          default:
            if constexpr (kMaxTile >= 8) dot.template tile<8>(r, t0, out);
            break;
        }
        for (int k = 0; k < nt; ++k) task.y[(t0 + k) * task.rows + r] = out[k];
      }
    }
  }
}

}  // namespace kvforge
