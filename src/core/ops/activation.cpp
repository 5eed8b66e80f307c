#include "core/ops/activation.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "core/formats/f16.h"

namespace kvforge {

void swiglu_scalar(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void swiglu_oai(const float* gate, const float* up, int64_t n, float* out) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = std::min(gate[i], kLimit);
    const float y = std::clamp(up[i], -kLimit, kLimit);
    out[i] = x / (1.0f + std::exp(kAlpha * -x)) * (y + 1.0f);
  }
}

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

namespace {

// gelu of every f16 value, rounded to f16: [65536] indexed by the input's bits.
const std::vector<uint16_t>& gelu_f16_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = fp32_to_fp16(gelu_tanh(fp16_to_fp32(uint16_t(h))));
    return t;
  }();
  return table;
}

}  // namespace

void geglu(const float* gate, const float* up, int64_t n, float* out) {
  const std::vector<uint16_t>& table = gelu_f16_table();
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    float g;
    if (x <= -10.0f)
      g = 0.0f;
    else if (x >= 10.0f)
      g = x;
    else
      g = fp16_to_fp32(table[fp32_to_fp16(x)]);
    out[i] = g * up[i];
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
