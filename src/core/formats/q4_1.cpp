#include "core/formats/q4_1.h"

#include "core/formats/affine_fit.h"
#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/quantize_checks.h"

namespace kvforge {

void dequantize_row_q4_1(const BlockQ4_1* src, float* dst, int64_t n) {
  constexpr int kHalf = BlockQ4_1::kElems / 2;
  for_each_block(src, dst, n, [](const BlockQ4_1& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    const float m = fp16_to_fp32(block.m);
    for (int i = 0; i < kHalf; ++i) {
      out[i] = float(block.qs[i] & 0x0f) * d + m;
      out[i + kHalf] = float(block.qs[i] >> 4) * d + m;
    }
  });
}

void quantize_row_q4_1(const float* src, BlockQ4_1* dst, int64_t n) {
  constexpr int kHalf = BlockQ4_1::kElems / 2;
  const int64_t n_blocks = n / BlockQ4_1::kElems;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * BlockQ4_1::kElems;
    require_finite_block("quantize_row_q4_1", x, BlockQ4_1::kElems, b * BlockQ4_1::kElems);
    const AffineBlock fit = fit_affine_block(x, 15);
    dst[b].d = fit.d;
    dst[b].m = fit.m;
    for (int i = 0; i < kHalf; ++i) dst[b].qs[i] = uint8_t(fit.q[i] | (fit.q[i + kHalf] << 4));
  }
}

}  // namespace kvforge
