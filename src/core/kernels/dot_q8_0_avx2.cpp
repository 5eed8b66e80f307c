// Q8_0 weights x Q8 activations, AVX2: the levels are the stored quants,
// multiplied and scaled as avx2_q8_scaled_dot.h describes.
#include <immintrin.h>

#include "core/formats/q8_0.h"
#include "core/kernels/avx2_q8_scaled_dot.h"

namespace kvforge {
namespace {

struct Q8_0Levels {
  using Block = BlockQ8_0;
  static __m256i levels(const uint8_t* blk) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  }
};

}  // namespace

void matmul_rows_q8_0_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Q8ScaledAvx2Dot<Q8_0Levels>{task});
}

}  // namespace kvforge
