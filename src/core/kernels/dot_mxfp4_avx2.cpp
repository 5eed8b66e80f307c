// MXFP4 weights x Q8 activations (the Q8-blocks form), AVX2: the shared
// kernel of avx2_block32_dot.h, which folds exact per-block integer sums as
// block32_fold.h defines (the scalar kernel's bits).
#include "core/kernels/mxfp4_avx2_levels.h"

namespace kvforge {

void matmul_rows_mxfp4_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<kBlock32Avx2TokenTile>(task, r0, r1, Block32Avx2Dot<MXFP4Avx2Levels>{task});
}

}  // namespace kvforge
