#include "core/ops/activation.h"

#include <cmath>

#include "core/cpu_features.h"

namespace kvforge {

void swiglu_scalar(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  switch (simd_level()) {
    case SimdLevel::Avx512:
      return swiglu_avx512(gate, up, n, out);
    case SimdLevel::Avx2:
      return swiglu_avx2(gate, up, n, out);
    case SimdLevel::Scalar:
      break;
  }
  swiglu_scalar(gate, up, n, out);
}

}  // namespace kvforge
