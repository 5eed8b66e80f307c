// SwiGLU, 8 lanes (see activation.h). The last n % 8 elements go through the
// same instructions from a zero-padded copy, so an element's result does not
// depend on where it sits.
#include <immintrin.h>
#include <string.h>

#include "core/ops/activation.h"
#include "core/ops/avx2_exp.h"

namespace kvforge {
namespace {

// e^x for any x, as in activation_avx512.cpp; avx2_exp takes x up to 88,
// so the result is set to +inf where x is beyond e^x's float range (88.72).
__m256 exp_clamped(__m256 x) {
  const __m256 overflow = _mm256_cmp_ps(x, _mm256_set1_ps(88.72f), _CMP_GT_OQ);
  const __m256 e =
      avx2_exp(_mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f)));
  return _mm256_blendv_ps(e, _mm256_set1_ps(__builtin_inff()), overflow);
}

__m256 swiglu8(__m256 g, __m256 u) {
  const __m256 e = exp_clamped(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

}  // namespace

void swiglu_avx2(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, swiglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n) {
    const size_t bytes = size_t(n - i) * sizeof(float);
    alignas(32) float g[8] = {}, u[8] = {}, o[8];
    memcpy(g, gate + i, bytes);
    memcpy(u, up + i, bytes);
    _mm256_store_ps(o, swiglu8(_mm256_load_ps(g), _mm256_load_ps(u)));
    memcpy(out + i, o, bytes);
  }
}

}  // namespace kvforge
