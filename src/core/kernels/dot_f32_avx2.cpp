// F32 weights x f32 activations, AVX2 + FMA.
#include "core/kernels/avx2_float_dot.h"

namespace kvforge {
namespace {

struct WidenF32 {
  static __m256 load8(const uint8_t* row, int64_t c) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c);
  }
  static float load1(const uint8_t* row, int64_t c) {
    float v;
    std::memcpy(&v, row + 4 * c, 4);
    return v;
  }
};

}  // namespace

void matmul_rows_f32_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Avx2FloatDot<WidenF32>{task});
}

}  // namespace kvforge
