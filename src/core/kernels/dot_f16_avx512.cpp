// F16 weights x f32 activations, AVX-512, halves widened by vcvtph2ps.
#include "core/kernels/avx512_float_dot.h"

namespace kvforge {
namespace {

struct WidenF16 {
  static __m512 load16(const uint8_t* row, int64_t c) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * c)));
  }
  static __m512 load16_masked(const uint8_t* row, int64_t c, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * c));
  }
};

}  // namespace

void matmul_rows_f16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_register_tiles<kFloatRowTile, kFloatTokenTile>(task, r0, r1, Avx512FloatDot<WidenF16>{task});
}

}  // namespace kvforge
