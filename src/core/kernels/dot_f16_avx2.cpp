// F16 weights x f32 activations, AVX2 + FMA, halves widened with F16C.
#include "core/kernels/avx2_float_dot.h"

namespace kvforge {
namespace {

struct WidenF16 {
  static __m256 load8(const uint8_t* row, int64_t c) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c)));
  }
  static float load1(const uint8_t* row, int64_t c) { return avx2_load_half(row + 2 * c); }
};

}  // namespace

void matmul_rows_f16_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Avx2FloatDot<WidenF16>{task});
}

}  // namespace kvforge
