// Q5_K weights x Q8_K activations, portable scalar code. Per super-block:
//   isum = sum_j sc[j] * sum_{i in sub-block j} q_i * a_i      (exact int32)
//   msum = sum_j m[j] * (bsums[2j] + bsums[2j+1])               (exact int32)
// with q = nibble | high bit << 4 in [0, 31], folded into the f32 sum by
// kquant_accumulate (d, dmin the super-scales), as for Q4_K.
#include "core/formats/f16.h"
#include "core/formats/q4_k.h"
#include "core/formats/q5_k.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Block blk's products with NT tokens added to their sums acc[k].
template <int NT>
static void add_block(const BlockQ5_K& blk, const TokenBlocks& tok, float* acc) {
  const float d = fp16_to_fp32(blk.d), dmin = fp16_to_fp32(blk.dmin);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) q4_k_scale_min(blk.scales, j, sc[j], m[j]);
  // The block's 5-bit levels in element order, once for all tokens (the
  // per-token loop over them then vectorizes).
  uint8_t levels[BlockQ5_K::kElems];
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      const int q = blk.qs[32 * g + l], h = blk.qh[l] >> (2 * g);
      levels[64 * g + l] = uint8_t((q & 15) | (h & 1) << 4);
      levels[64 * g + 32 + l] = uint8_t((q >> 4) | (h & 2) << 3);
    }
  }
  for (int k = 0; k < NT; ++k) {
    const BlockQ8_K& a = tok.q8_k(k);
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t sum = 0;
      for (int l = 0; l < 32; ++l) sum += levels[32 * j + l] * a.qs[32 * j + l];
      isum += sc[j] * sum;
    }
    for (int j = 0; j < 8; ++j) msum += m[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
    acc[k] = kquant_accumulate(acc[k], d, dmin, a.d, isum, msum);
  }
}

void matmul_rows_q5_k_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, BlockRowDot<BlockQ5_K>{task});
}

}  // namespace kvforge
