// The portable scalar kernel for Q4_1 / Q5_1 weights x Q8-blocks activations
// (matmul_task.h), the reference the SIMD levels match bit for bit: exact
// integer block dot products folded as affine_fold.h defines.
//
// Blocks provides kBlockBytes,
//   static int32_t dot(const uint8_t* block, const int8_t* a)
// giving the exact sum of the block's 32 levels times the quants a[0..31], and
//   static void step_and_offset(const uint8_t* block, float& d, float& m).
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
      const uint8_t* block = w + b * Blocks::kBlockBytes;
      float dw, mw;
      Blocks::step_and_offset(block, dw, mw);
      for (int k = 0; k < NT; ++k) {
        const int32_t isum = Blocks::dot(block, task.act_quants + (t0 + k) * task.cols + 32 * b);
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
