// Q2_K weights x Q8_K activations, portable scalar code. Per super-block:
//   isum = sum_j sc[j] * sum_{i in sub-block j} q_i * a_i     (exact int32)
//   msum = sum_j m[j] * bsums[j]                               (exact int32)
// (sub-blocks of 16 match the 16-element activation sums one to one),
// folded into the f32 sum by kquant_accumulate (d, dmin the super-scales).
// |isum| <= 15 * 3 * 127 * 256 and |msum| <= 15 * 127 * 256: exact in f32.
#include "core/formats/f16.h"
#include "core/formats/q2_k.h"
#include "core/kernels/kquant_accumulate.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {

// Block blk's products with NT tokens added to their sums acc[k].
template <int NT>
static void add_block(const BlockQ2_K& blk, const TokenBlocks& tok, float* acc) {
  const float d = fp16_to_fp32(blk.d), dmin = fp16_to_fp32(blk.dmin);
  for (int k = 0; k < NT; ++k) {
    const BlockQ8_K& a = tok.q8_k(k);
    int32_t isum = 0, msum = 0;
    // Bit pair f of qs[32h + l] is element 128h + 32f + l: sub-block
    // 8h + 2f for l < 16, 8h + 2f + 1 for l >= 16.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = blk.qs + 32 * h;
      for (int f = 0; f < 4; ++f) {
        const int8_t* aq = a.qs + 128 * h + 32 * f;
        int32_t lo = 0, hi = 0;
        for (int l = 0; l < 16; ++l) lo += ((q[l] >> (2 * f)) & 3) * aq[l];
        for (int l = 16; l < 32; ++l) hi += ((q[l] >> (2 * f)) & 3) * aq[l];
        const int j = 8 * h + 2 * f;
        isum += (blk.scales[j] & 15) * lo + (blk.scales[j + 1] & 15) * hi;
      }
    }
    for (int j = 0; j < 16; ++j) msum += (blk.scales[j] >> 4) * a.bsums[j];
    acc[k] = kquant_accumulate(acc[k], d, dmin, a.d, isum, msum);
  }
}

void matmul_rows_q2_k_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, BlockRowDot<BlockQ2_K>{task});
}

}  // namespace kvforge
