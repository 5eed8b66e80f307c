// Q4_0 weights x Q8 activations, AVX2: nibbles unpacked to signed bytes
// (nibble - 8), then the same exact integer block dot product as Q8_0.
#include <immintrin.h>

#include "core/formats/q4_0.h"
#include "core/kernels/avx2_helpers.h"
#include "core/kernels/tile_loop.h"

namespace kvforge {
namespace {

struct Q4_0Avx2Dot {
  const MatmulTask& task;

  template <int NT>
  void tile(int64_t row, int64_t t0, float* out) const {
    const uint8_t* w = task.weights + row * int64_t(task.row_bytes);
    const int64_t n_blocks = task.cols / BlockQ4_0::kElems;
    const int8_t* a[NT];
    const float* da[NT];
    __m256 acc[NT];
    for (int k = 0; k < NT; ++k) {
      a[k] = task.act_quants + (t0 + k) * task.cols;
      da[k] = task.act_scales + (t0 + k) * n_blocks;
      acc[k] = _mm256_setzero_ps();
    }
    const __m128i low4 = _mm_set1_epi8(0x0f);
    const __m256i eight = _mm256_set1_epi8(8);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = w + b * int64_t(sizeof(BlockQ4_0));
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
      // Elements 0-15 are the low nibbles, 16-31 the high nibbles.
      const __m256i nibbles = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low4),
                                               _mm_and_si128(packed, low4));
      const __m256i wq = _mm256_sub_epi8(nibbles, eight);
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

void matmul_rows_q4_0_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Q4_0Avx2Dot{task});
}

}  // namespace kvforge
