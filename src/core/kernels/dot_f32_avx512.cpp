// F32 weights x f32 activations, AVX-512.
#include "core/kernels/avx512_float_dot.h"

namespace kvforge {
namespace {

struct WidenF32 {
  static __m512 load16(const uint8_t* row, int64_t c) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + c);
  }
  static __m512 load16_masked(const uint8_t* row, int64_t c, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + c);
  }
};

}  // namespace

void matmul_rows_f32_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_register_tiles<kFloatRowTile, kFloatTokenTile>(task, r0, r1, Avx512FloatDot<WidenF32>{task});
}

}  // namespace kvforge
