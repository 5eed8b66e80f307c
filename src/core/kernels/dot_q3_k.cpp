// Q3_K weights x Q8_K activations, portable scalar code. Per super-block the
// exact integer
//   isum = sum_j (sc[j] - 32) * sum_{i in sub-block j} q_i * a_i
// with q_i = low_i - 4 * [high bit of i clear], in [-4, 3], is folded into
// the f32 sum by kquant_accumulate_scaled (d the super-scale).
// |isum| <= 32 * 4 * 127 * 256 < 2^24: exact in f32.
#include "core/formats/f16.h"
#include "core/formats/q3_k.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/q3_k_scales.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Block blk's products with NT tokens added to their sums acc[k].
template <int NT>
static void add_block(const BlockQ3_K& blk, const TokenBlocks& tok, float* acc) {
  const float d = fp16_to_fp32(blk.d);
  uint8_t sc[16];
  q3_k_unpack_scales(blk.scales, sc);
  for (int k = 0; k < NT; ++k) {
    const BlockQ8_K& a = tok.q8_k(k);
    int32_t isum = 0;
    // Bit pair f of qs[32h + l] and bit 4h + f of hmask[l] are element
    // 128h + 32f + l: sub-block 8h + 2f for l < 16, 8h + 2f + 1 for l >= 16.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = blk.qs + 32 * h;
      for (int f = 0; f < 4; ++f) {
        const int8_t* aq = a.qs + 128 * h + 32 * f;
        const int bit = 4 * h + f;
        int32_t lo = 0, hi = 0;
        for (int l = 0; l < 16; ++l)
          lo += ((((q[l] >> (2 * f)) & 3) | ((blk.hmask[l] >> bit) & 1) << 2) - 4) * aq[l];
        for (int l = 16; l < 32; ++l)
          hi += ((((q[l] >> (2 * f)) & 3) | ((blk.hmask[l] >> bit) & 1) << 2) - 4) * aq[l];
        const int j = 8 * h + 2 * f;
        isum += (sc[j] - 32) * lo + (sc[j + 1] - 32) * hi;
      }
    }
    acc[k] = kquant_accumulate_scaled(acc[k], d, a.d, isum);
  }
}

void matmul_rows_q3_k_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, BlockRowDot<BlockQ3_K>{task});
}

}  // namespace kvforge
