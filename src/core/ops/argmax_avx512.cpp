// argmax_checked, 16 lanes (see argmax.h). Pass 1: the lane-wise maximum in
// four accumulators (independent chains), with a mask of lanes that held
// NaN or +inf. Pass 2: the first 16 values holding the maximum, and the
// lowest such lane. The tail goes through masked loads that read -inf
// beyond n, which changes neither pass's answer.
#include "core/kernels/avx512_helpers.h"
#include "core/ops/argmax.h"

namespace kvforge {
namespace {

// Not <cmath>'s INFINITY: this file includes no library header with inline code
// (it is compiled for an instruction set the machine may lack).
constexpr float kInf = __builtin_inff();

__m512 load_or_neg_inf(const float* x, int64_t i, int64_t n) {
  if (i + 16 <= n) return _mm512_loadu_ps(x + i);
  const __mmask16 m = __mmask16((1u << (n - i)) - 1);
  return _mm512_mask_loadu_ps(_mm512_set1_ps(-kInf), m, x + i);
}

__mmask16 invalid_lanes(__m512 v) {
  return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) |
         _mm512_cmp_ps_mask(v, _mm512_set1_ps(kInf), _CMP_EQ_OQ);
}

}  // namespace

ArgmaxResult argmax_checked_avx512(const float* x, int64_t n) {
  __m512 m0 = _mm512_set1_ps(-kInf), m1 = m0, m2 = m0, m3 = m0;
  __mmask16 bad = 0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    const __m512 c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
    bad |= invalid_lanes(a) | invalid_lanes(b) | invalid_lanes(c) | invalid_lanes(d);
    m0 = _mm512_max_ps(m0, a);
    m1 = _mm512_max_ps(m1, b);
    m2 = _mm512_max_ps(m2, c);
    m3 = _mm512_max_ps(m3, d);
  }
  for (; i < n; i += 16) {
    const __m512 a = load_or_neg_inf(x, i, n);
    bad |= invalid_lanes(a);
    m0 = _mm512_max_ps(m0, a);
  }
  // Where the invalid value is, and that no earlier one precedes it, is the
  // reference's business: errors need not be fast.
  if (bad) return argmax_checked_scalar(x, n);
  const float max = avx512_hmax(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
  const __m512 target = _mm512_set1_ps(max);
  for (i = 0; i < n; i += 16) {
    const __mmask16 hit = _mm512_cmp_ps_mask(load_or_neg_inf(x, i, n), target, _CMP_EQ_OQ);
    if (hit) return {i + __builtin_ctz(hit), -1};
  }
  return {};  // not reached: max is one of the values
}

}  // namespace kvforge
