// Q4_0 weights x Q8 activations, portable scalar code: an exact integer dot
// product of (nibble - 8) with the activation quants per 32-block, scaled by
// both blocks' scales into an f32 sum.
#include "core/formats/f16.h"
#include "core/formats/q4_0.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Block blk's products with NT tokens added to their sums acc[k].
template <int NT>
static void add_block(const BlockQ4_0& blk, const TokenBlocks& tok, float* acc) {
  constexpr int kHalf = BlockQ4_0::kElems / 2;
  const float dw = fp16_to_fp32(blk.d);
  for (int k = 0; k < NT; ++k) {
    const int8_t* a = tok.q8(k);
    int32_t isum = 0;
    for (int i = 0; i < kHalf; ++i) {
      isum += ((blk.qs[i] & 15) - 8) * a[i] + ((blk.qs[i] >> 4) - 8) * a[i + kHalf];
    }
    acc[k] += float(isum) * (dw * tok.q8_scale(k));
  }
}

void matmul_rows_q4_0_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, BlockRowDot<BlockQ4_0>{task});
}

}  // namespace kvforge
