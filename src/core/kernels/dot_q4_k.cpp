// Q4_K weights x Q8_K activations, portable scalar code. Per super-block:
//   isum = sum_j sc[j] * sum_{i in sub-block j} q_i * a_i      (exact int32)
//   msum = sum_j m[j] * (bsums[2j] + bsums[2j+1])               (exact int32)
// folded into the f32 sum by kquant_accumulate (d, dmin the super-scales).
#include "core/formats/f16.h"
#include "core/formats/q4_k.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Block blk's products with NT tokens added to their sums acc[k].
template <int NT>
static void add_block(const BlockQ4_K& blk, const TokenBlocks& tok, float* acc) {
  const float d = fp16_to_fp32(blk.d), dmin = fp16_to_fp32(blk.dmin);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) q4_k_scale_min(blk.scales, j, sc[j], m[j]);
  for (int k = 0; k < NT; ++k) {
    const BlockQ8_K& a = tok.q8_k(k);
    int32_t isum = 0, msum = 0;
    for (int g = 0; g < 4; ++g) {
      int32_t lo = 0, hi = 0;
      for (int l = 0; l < 32; ++l) {
        lo += (blk.qs[32 * g + l] & 15) * a.qs[64 * g + l];
        hi += (blk.qs[32 * g + l] >> 4) * a.qs[64 * g + 32 + l];
      }
      isum += sc[2 * g] * lo + sc[2 * g + 1] * hi;
    }
    for (int j = 0; j < 8; ++j) msum += m[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
    acc[k] = kquant_accumulate(acc[k], d, dmin, a.d, isum, msum);
  }
}

void matmul_rows_q4_k_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, BlockRowDot<BlockQ4_K>{task});
}

}  // namespace kvforge
