// The one-token row loop of the K-quant kernels that finish their integer
// sums four super-blocks at a time (kquant_groups_avx2.h, _avx512.h).
//
// Dot::group_terms<kCount>(w, a) returns, in 8 f32 lanes, the terms of
// super-blocks w[0 .. kCount) against activations a[0 .. kCount) in the
// layout of kquant_accumulate_terms. Each group is folded into the row's sum
// while the next group is computed: the fold is a chain of dependent adds,
// which would otherwise stall the loop once per group.
//
// `static`: each including kernel file gets its own copy (see avx2_helpers.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/formats/q8_k.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// kMin: the terms carry a subtracted min term (kquant_accumulate_terms), or
// not (kquant_accumulate_scaled_terms).
template <bool kMin, class Dot, class Block>
static inline float kquant_decode_row(const Dot& dot, const Block* w, const BlockQ8_K* a,
                                      int64_t n_blocks) {
  const auto fold = [](float acc, const float* terms, int count) {
    return kMin ? kquant_accumulate_terms(acc, terms, count)
                : kquant_accumulate_scaled_terms(acc, terms, count);
  };
  float acc = 0.0f;
  alignas(32) float pending[8];
  int64_t b = 0;
  if (n_blocks >= 4) {
    _mm256_store_ps(pending, dot.template group_terms<4>(w, a));
    for (b = 4; b + 4 <= n_blocks; b += 4) {
      const __m256 terms = dot.template group_terms<4>(w + b, a + b);
      acc = fold(acc, pending, 4);  // the group before, meanwhile
      _mm256_store_ps(pending, terms);
    }
    acc = fold(acc, pending, 4);
  }
  switch (n_blocks - b) {
    case 1:
      _mm256_store_ps(pending, dot.template group_terms<1>(w + b, a + b));
      return fold(acc, pending, 1);
    case 2:
      _mm256_store_ps(pending, dot.template group_terms<2>(w + b, a + b));
      return fold(acc, pending, 2);
    case 3:
      _mm256_store_ps(pending, dot.template group_terms<3>(w + b, a + b));
      return fold(acc, pending, 3);
    default:
      return acc;
  }
}

// The row tile of such a kernel: one token through kquant_decode_row, NT > 1
// tokens through dot.tokens<NT>(w, t0, n_blocks, out).
template <int NT, bool kMin, class Block, class Dot>
static inline void kquant_group_tile(const Dot& dot, const MatmulTask& task, int64_t row,
                                     int64_t t0, float* out) {
  const Block* w = weight_row<Block>(task, row);
  const int64_t n_blocks = task.cols / Block::kElems;
  if constexpr (NT == 1) {
    out[0] = kquant_decode_row<kMin>(dot, w, task.act_k + t0 * n_blocks, n_blocks);
  } else {
    dot.template tokens<NT>(w, t0, n_blocks, out);
  }
}

}  // namespace kvforge
