#include "core/formats/q8_0.h"

#include <cmath>

#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/quantize_checks.h"

namespace kvforge {

void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t n) {
  for_each_block(src, dst, n, [](const BlockQ8_0& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    for (int i = 0; i < BlockQ8_0::kElems; ++i) out[i] = float(block.qs[i]) * d;
  });
}

void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t n) {
  const int64_t n_blocks = n / BlockQ8_0::kElems;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * BlockQ8_0::kElems;
    require_finite_block("quantize_row_q8_0", x, BlockQ8_0::kElems, b * BlockQ8_0::kElems);
    float amax = 0.0f;
    for (int i = 0; i < BlockQ8_0::kElems; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = fp32_to_fp16(d);
    // 1/d overflows only for float-subnormal blocks (which decode to zero
    // anyway, half(d) being 0); dividing keeps their quants in range.
    const bool divide = !std::isfinite(id);
    for (int i = 0; i < BlockQ8_0::kElems; ++i) {
      dst[b].qs[i] = int8_t(std::round(divide ? x[i] / d : x[i] * id));
    }
  }
}

}  // namespace kvforge
