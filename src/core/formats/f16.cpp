#include "core/formats/f16.h"

#include "core/cpu_features.h"

namespace kvforge {

// The KV caches encode every new K and V row with these (2 x kv_dim values
// per layer and token, between the matmuls of a decode step, on one thread),
// so they take the F16C instructions when the SIMD level has them.
void dequantize_row_f16(const uint16_t* src, float* dst, int64_t n) {
  if (simd_level() != SimdLevel::Scalar) return dequantize_row_f16_avx2(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

void quantize_row_f16(const float* src, uint16_t* dst, int64_t n) {
  if (simd_level() != SimdLevel::Scalar) return quantize_row_f16_avx2(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

}  // namespace kvforge
