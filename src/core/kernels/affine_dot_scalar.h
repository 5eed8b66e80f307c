// The portable scalar kernel for Q4_1 / Q5_1 weights x Q8-blocks activations
// (matmul_task.h), the reference the SIMD levels match bit for bit: exact
// integer block dot products folded as affine_fold.h defines.
//
// Blocks provides kBlockBytes and
//   static void levels(const uint8_t* block, uint8_t (&q)[32], float& d, float& m)
// giving a block's 32 levels in element order and its step and offset.
#pragma once

#include <cstdint>

#include "core/kernels/affine_fold.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

template <class Blocks>
struct AffineScalarDot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t n_blocks = task.cols / 32;
    float lane[NT][kAffineFoldLanes] = {};
    for (int64_t b = 0; b < n_blocks; ++b) {
      uint8_t q[32];
      float dw, mw;
      Blocks::levels(w + b * Blocks::kBlockBytes, q, dw, mw);
      for (int k = 0; k < NT; ++k) {
        const int8_t* a = task.act_quants + (t0 + k) * task.cols + 32 * b;
        int32_t isum = 0;
        for (int i = 0; i < 32; ++i) isum += q[i] * a[i];
        const int64_t s = (t0 + k) * n_blocks + b;
        lane[k][b % kAffineFoldLanes] +=
            affine_block_term(dw, mw, task.act_scales[s], task.act_block_sums[s], isum);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = affine_fold_lanes(lane[k]);
  }
};

}  // namespace
}  // namespace kvforge
