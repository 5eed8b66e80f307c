#include "core/formats/f16.h"

namespace kvforge {

void dequantize_row_f16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

void quantize_row_f16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

}  // namespace kvforge
