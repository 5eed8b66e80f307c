#include "core/ops/argmax.h"

#include <cmath>

#include "core/cpu_features.h"

namespace kvforge {

ArgmaxResult argmax_checked_scalar(const float* x, int64_t n) {
  ArgmaxResult r;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i]) || x[i] == INFINITY) {
      r.first_invalid = i;
      return r;
    }
    if (x[i] > x[r.index]) r.index = i;
  }
  return r;
}

ArgmaxResult argmax_checked(const float* x, int64_t n) {
  switch (simd_level()) {
    case SimdLevel::Avx512:
      return argmax_checked_avx512(x, n);
    case SimdLevel::Avx2:
      return argmax_checked_avx2(x, n);
    case SimdLevel::Scalar:
      break;
  }
  return argmax_checked_scalar(x, n);
}

}  // namespace kvforge
