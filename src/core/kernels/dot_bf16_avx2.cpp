// BF16 weights x f32 activations, AVX2 + FMA; a bf16 widens to f32 by a
// 16-bit left shift of its bits.
#include "core/kernels/avx2_float_dot.h"

namespace kvforge {
namespace {

struct WidenBf16 {
  static __m256 load8(const uint8_t* row, int64_t c) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float load1(const uint8_t* row, int64_t c) {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, 2);
    const uint32_t bits = uint32_t(h) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
};

}  // namespace

void matmul_rows_bf16_avx2(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_row_tiles<4>(task, r0, r1, Avx2FloatDot<WidenBf16>{task});
}

}  // namespace kvforge
