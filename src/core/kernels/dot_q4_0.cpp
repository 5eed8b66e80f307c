// Q4_0 weights x Q8 activations, portable scalar code: an exact integer dot
// product of (nibble - 8) with the activation quants per 32-block, scaled by
// both blocks' scales into an f32 sum.
#include "core/formats/f16.h"
#include "core/formats/q4_0.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

struct Q4_0Dot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const auto* w = weight_row<BlockQ4_0>(task, row);
    const int64_t n_blocks = task.cols / BlockQ4_0::kElems;
    constexpr int kHalf = BlockQ4_0::kElems / 2;
    float acc[NT] = {};
    for (int64_t b = 0; b < n_blocks; ++b) {
      const float dw = fp16_to_fp32(w[b].d);
      for (int k = 0; k < NT; ++k) {
        const int8_t* a = task.act_quants + (t0 + k) * task.cols + b * BlockQ4_0::kElems;
        int32_t isum = 0;
        for (int i = 0; i < kHalf; ++i) {
          isum += ((w[b].qs[i] & 15) - 8) * a[i] + ((w[b].qs[i] >> 4) - 8) * a[i + kHalf];
        }
        acc[k] += float(isum) * (dw * task.act_scales[(t0 + k) * n_blocks + b]);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = acc[k];
  }
};

}  // namespace

void matmul_rows_q4_0_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Q4_0Dot{task});
}

}  // namespace kvforge
