// F16 weights x f32 activations, AVX-512, halves widened by vcvtph2ps.
#include "core/kernels/avx512_float_dot.h"

namespace kvforge {
namespace {

__m512 widen_f16(__m256i h) { return _mm512_cvtph_ps(h); }

using WidenF16 = WidenHalves<widen_f16>;

}  // namespace

void matmul_rows_f16_avx512(const MatmulTask& task, int64_t r0, int64_t r1) {
  // Decode reads 8 row streams per thread, not 4: F16 rows are the longest
  // of the weight types, and one core needs more reads in flight to keep up
  // with them (the bandwidth probe reads 8 streams too).
  // Row grouping does not change any row's result.
  constexpr int kDecodeStreams = 8;
  run_register_tiles<kFloatRowTile, kFloatTokenTile, Avx512FloatDot<WidenF16>, kDecodeStreams>(
      task, r0, r1, Avx512FloatDot<WidenF16>{task});
}

}  // namespace kvforge
