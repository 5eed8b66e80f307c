#include "core/formats/bf16.h"

namespace kvforge {

void dequantize_row_bf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
}

void quantize_row_bf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_bf16(src[i]);
}

}  // namespace kvforge
