// BF16 weights x f32 activations, AVX-512; a bf16 widens to f32 by a 16-bit
// left shift of its bits.
#include "core/kernels/avx512_float_dot.h"

namespace kvforge {
namespace {

__m512 widen_bf16(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

using WidenBf16 = WidenHalves<widen_bf16>;

}  // namespace

void matmul_rows_bf16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  run_register_tiles<kFloatRowTile, kFloatTokenTile>(task, r0, r1, Avx512FloatDot<WidenBf16>{task});
}

}  // namespace kvforge
