// IQ4_XS weights x Q8_K activations, portable scalar code. Per super-block
// the exact integer
//   isum = sum_j (ls[j] - 32) * sum_{i in sub-block j} codebook[k_i] * a_i
// is folded into the f32 sum by kquant_accumulate_scaled (d the super-scale).
#include "core/formats/f16.h"
#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_xs.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Block blk's products with NT tokens added to their sums acc[k].
template <int NT>
static void add_block(const BlockIQ4_XS& blk, const TokenBlocks& tok, float* acc) {
  const float d = fp16_to_fp32(blk.d);
  int factor[8];
  for (int j = 0; j < 8; ++j) factor[j] = iq4_xs_scale(blk, j) - 32;
  for (int k = 0; k < NT; ++k) {
    const BlockQ8_K& a = tok.q8_k(k);
    int32_t isum = 0;
    for (int j = 0; j < 8; ++j) {
      const uint8_t* q = blk.qs + 16 * j;
      const int8_t* aq = a.qs + 32 * j;
      int32_t sum = 0;
      for (int l = 0; l < 16; ++l) {
        sum += kIq4Codebook[q[l] & 15] * aq[l] + kIq4Codebook[q[l] >> 4] * aq[16 + l];
      }
      isum += factor[j] * sum;
    }
    acc[k] = kquant_accumulate_scaled(acc[k], d, a.d, isum);
  }
}

void matmul_rows_iq4_xs_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, BlockRowDot<BlockIQ4_XS>{task});
}

}  // namespace kvforge
