// RMS normalisation: y = x / sqrt(mean(x^2) + eps) * weight.
#pragma once

#include <cmath>
#include <cstdint>

namespace kvforge {

// x, y: [n]; may alias. Sum of squares in double so the result does not depend
// on n's size in any way that matters for f32 tolerances.
inline void rms_norm(const float* x, const float* weight, int64_t n, float eps, float* y) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float scale = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

}  // namespace kvforge
