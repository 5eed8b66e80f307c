#include "core/formats/importance_weights.h"

#include <cmath>

// The searches' choices must not depend on whether a compiler fuses the sum
// of squares' multiply-adds (GCC would when targeting FMA).
// src/core/CMakeLists.txt builds this file with -ffp-contract=off.

namespace kvforge {

void importance_weights(const float* x, int n, float* w) {
  float sum_x2 = 0;
  for (int i = 0; i < n; ++i) sum_x2 += x[i] * x[i];
  const float rms = std::sqrt(sum_x2 / n);
  for (int i = 0; i < n; ++i) w[i] = rms + std::fabs(x[i]);
}

float largest_magnitude(const float* x, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

}  // namespace kvforge
