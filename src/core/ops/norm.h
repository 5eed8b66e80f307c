// RMS normalisation: y = x / sqrt(mean(x^2) + eps) * weight.
#pragma once

#include <cmath>
#include <cstdint>

namespace kvforge {

// x, y: [n]; may alias. Sum of squares in double so the result does not depend
// on n's size in any way that matters for f32 tolerances. Eight running sums
// (element i goes to sum i % 8, added up in a fixed order at the end) let the
// compiler keep them in vector registers rather than wait on one chain of
// dependent double adds: the norm runs on one thread between the matmuls of
// every layer (docs/bench/design-measurements.md). The order is fixed, so the result is the
// same for every batch, thread count and schedule.
inline void rms_norm(const float* x, const float* weight, int64_t n, float eps, float* y) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] += double(x[i + j]) * x[i + j];
  const int tail = int(n - i);  // < kLanes
  for (int j = 0; j < tail; ++j) lane[j] += double(x[i + j]) * x[i + j];
  double ss = 0;
  for (int j = 0; j < kLanes; ++j) ss += lane[j];
  const float scale = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
  for (i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

}  // namespace kvforge
