// Q8_0 weights x Q8 activations, AVX2: per 32-block an exact integer dot
// product (sign trick + vpmaddubsw + vpmaddwd), converted to f32 and
// accumulated with the product of the two block scales by FMA.
#include <immintrin.h>

#include "core/formats/q8_0.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

struct Q8_0Avx2Dot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t n_blocks = task.cols / BlockQ8_0::kElems;
    const int8_t* a[NT];
    const float* da[NT];
    __m256 acc[NT];
    for (int k = 0; k < NT; ++k) {
      a[k] = task.act_quants + (t0 + k) * task.cols;
      da[k] = task.act_scales + (t0 + k) * n_blocks;
      acc[k] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = w + b * int64_t(sizeof(BlockQ8_0));
      const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
      const float dw = avx2_load_half(blk);
      for (int k = 0; k < NT; ++k) {
        const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[k] + 32 * b));
        const __m256 dot = _mm256_cvtepi32_ps(avx2_dot_i8(wq, aq));
        acc[k] = _mm256_fmadd_ps(dot, _mm256_set1_ps(dw * da[k][b]), acc[k]);
      }
    }
    for (int k = 0; k < NT; ++k) out[k] = avx2_hsum(acc[k]);
  }
};

}  // namespace

void matmul_rows_q8_0_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Q8_0Avx2Dot{task});
}

}  // namespace kvforge
