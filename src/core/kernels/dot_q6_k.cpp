// Q6_K weights x Q8_K activations, portable scalar code. Per super-block the
// exact integer
//   isum = sum_s scales[s] * sum_{i in sub-block s} q_i * a_i  -  32 * sum_s scales[s] * bsums[s]
// (q in [0, 63]; the second term removes the -32 offset using the
// activation sums) is folded into the f32 sum by kquant_accumulate.
#include "core/formats/f16.h"
#include "core/formats/q6_k.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Block blk's products with NT tokens added to their sums acc[k].
template <int NT>
static void add_block(const BlockQ6_K& blk, const TokenBlocks& tok, float* acc) {
  const float d = fp16_to_fp32(blk.d);
  for (int k = 0; k < NT; ++k) {
    const BlockQ8_K& a = tok.q8_k(k);
    int32_t isum = 0, offset = 0;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk.ql + 64 * h;
      const uint8_t* qh = blk.qh + 32 * h;
      const int8_t* aq = a.qs + 128 * h;
      int32_t sums[8] = {};
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        sums[s] += ((ql[l] & 15) | ((qh[l] & 3) << 4)) * aq[l];
        sums[s + 2] += ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) * aq[l + 32];
        sums[s + 4] += ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) * aq[l + 64];
        sums[s + 6] += ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) * aq[l + 96];
      }
      for (int s = 0; s < 8; ++s) isum += blk.scales[8 * h + s] * sums[s];
    }
    for (int s = 0; s < 16; ++s) offset += blk.scales[s] * a.bsums[s];
    acc[k] = kquant_accumulate(acc[k], d, 0.0f, a.d, isum - 32 * offset, 0);
  }
}

void matmul_rows_q6_k_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, BlockRowDot<BlockQ6_K>{task});
}

}  // namespace kvforge
