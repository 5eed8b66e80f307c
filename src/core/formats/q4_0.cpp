#include "core/formats/q4_0.h"

#include <algorithm>
#include <cmath>

#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/quantize_checks.h"

namespace kvforge {

void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, int64_t n) {
  constexpr int kHalf = BlockQ4_0::kElems / 2;
  for_each_block(src, dst, n, [](const BlockQ4_0& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    for (int i = 0; i < kHalf; ++i) {
      out[i] = float((block.qs[i] & 0x0f) - 8) * d;
      out[i + kHalf] = float((block.qs[i] >> 4) - 8) * d;
    }
  });
}

void quantize_row_q4_0(const float* src, BlockQ4_0* dst, int64_t n) {
  constexpr int kHalf = BlockQ4_0::kElems / 2;
  const int64_t n_blocks = n / BlockQ4_0::kElems;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * BlockQ4_0::kElems;
    require_finite_block("quantize_row_q4_0", x, BlockQ4_0::kElems, b * BlockQ4_0::kElems);
    float amax = 0.0f;
    float max = 0.0f;  // the largest-magnitude element, with its sign
    for (int i = 0; i < BlockQ4_0::kElems; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = fp32_to_fp16(d);
    // 1/d overflows only for float-subnormal blocks; dividing keeps them in range.
    const bool divide = !std::isfinite(id);
    auto level = [&](float v) {
      // v/d is in [-8, 8], so +8.5 is in [0.5, 16.5] and truncation is floor.
      return std::min(15, int((divide ? v / d : v * id) + 8.5f));
    };
    for (int i = 0; i < kHalf; ++i) {
      const int lo = level(x[i]);
      const int hi = level(x[i + kHalf]);
      dst[b].qs[i] = uint8_t(lo | (hi << 4));
    }
  }
}

}  // namespace kvforge
