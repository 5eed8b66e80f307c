// MXFP4 weights x Q8 activations (the Q8-blocks form), portable scalar code:
// per 32-block the exact integer dot product of the doubled E2M1 levels with
// the activation quants, times the block's halved E8M0 scale and the
// activation scale (llama.cpp's ggml_vec_dot_mxfp4_q8_0 term), folded into
// f32 as block32_fold.h defines for every level.
#include <cstddef>

#include "core/formats/mxfp4.h"
#include "core/kernels/block32_fold.h"

namespace kvforge {
namespace {

struct MXFP4Levels {
  static constexpr int64_t kBlockBytes = sizeof(BlockMXFP4);

  static float scale(const uint8_t* block) { return e8m0_half(block[offsetof(BlockMXFP4, e)]); }

  static void levels(const uint8_t* block, int8_t (&w)[32]) {
    const uint8_t* qs = block + offsetof(BlockMXFP4, qs);
    for (int j = 0; j < 16; ++j) {
      w[j] = kMxfp4Levels[qs[j] & 15];
      w[j + 16] = kMxfp4Levels[qs[j] >> 4];
    }
  }
};

}  // namespace

void matmul_rows_mxfp4_scalar(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Block32ScalarDot<MXFP4Levels>{task});
}

}  // namespace kvforge
