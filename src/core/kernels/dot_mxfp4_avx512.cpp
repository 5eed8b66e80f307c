// MXFP4 weights x Q8 activations at the AVX-512 level: the AVX2 kernel
// (mxfp4_avx2_levels.h), built for this level. The Q8-blocks activations
// have the same plain layout at every level (matmul_task.h), and the kernel
// gives the scalar kernel's bits; a kernel of 512-bit registers over the
// 17-byte blocks is not written yet.
#include "core/kernels/mxfp4_avx2_levels.h"

namespace kvforge {

void matmul_rows_mxfp4_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<kBlock32Avx2TokenTile>(task, r0, r1, Block32Avx2Dot<MXFP4Avx2Levels>{task});
}

}  // namespace kvforge
