// argmax_checked, 8 lanes (see argmax.h and argmax_avx512.cpp, the same two
// passes). The last n % 8 values go through the reference loop's compare
// with the vector passes' maximum.
#include <immintrin.h>

#include "core/ops/argmax.h"

namespace kvforge {
namespace {

// Not <cmath>'s INFINITY: this file includes no library header with inline code
// (it is compiled for an instruction set the machine may lack).
constexpr float kInf = __builtin_inff();

__m256 invalid_lanes(__m256 v) {
  return _mm256_or_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q),
                      _mm256_cmp_ps(v, _mm256_set1_ps(kInf), _CMP_EQ_OQ));
}

}  // namespace

ArgmaxResult argmax_checked_avx2(const float* x, int64_t n) {
  __m256 m0 = _mm256_set1_ps(-kInf), m1 = m0, m2 = m0, m3 = m0;
  __m256 bad = _mm256_setzero_ps();
  const int64_t whole = n / 32 * 32;
  for (int64_t i = 0; i < whole; i += 32) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    const __m256 c = _mm256_loadu_ps(x + i + 16), d = _mm256_loadu_ps(x + i + 24);
    bad = _mm256_or_ps(bad, _mm256_or_ps(_mm256_or_ps(invalid_lanes(a), invalid_lanes(b)),
                                         _mm256_or_ps(invalid_lanes(c), invalid_lanes(d))));
    m0 = _mm256_max_ps(m0, a);
    m1 = _mm256_max_ps(m1, b);
    m2 = _mm256_max_ps(m2, c);
    m3 = _mm256_max_ps(m3, d);
  }
  if (_mm256_movemask_ps(bad)) return argmax_checked_scalar(x, n);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
  float max = -kInf;
  for (float l : lanes) max = l > max ? l : max;
  for (int64_t i = whole; i < n; ++i) {
    if (x[i] != x[i] || x[i] == kInf) return argmax_checked_scalar(x, n);
    max = x[i] > max ? x[i] : max;
  }
  const __m256 target = _mm256_set1_ps(max);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), target, _CMP_EQ_OQ));
    if (hit) return {i + __builtin_ctz(unsigned(hit)), -1};
  }
  for (; i < n; ++i)
    if (x[i] == max) return {i, -1};
  return {};  // not reached: max is one of the values
}

}  // namespace kvforge
