// SwiGLU, 16 lanes (see activation.h). The last n % 16 elements go through
// the same instructions with masked loads and stores, so an element's result
// does not depend on where it sits.
//
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized inside their own
// _mm256_undefined_* helpers (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "core/ops/activation.h"
#include "core/ops/avx512_exp.h"

namespace kvforge {
namespace {

// e^x for any x, as the scalar level sees it where it matters here (1 + e^x):
// x is clamped to [-87, 100] (below, 1 + e^x is 1 all the same; above,
// e^x is +inf like std::exp's).
__m512 exp_clamped(__m512 x) {
  return avx512_exp(
      _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(100.0f)));
}

// g / (1 + e^-g) * u. A NaN gate stays NaN: the clamp inside exp_clamped
// would hide it, but g itself is a factor of the result.
__m512 swiglu16(__m512 g, __m512 u) {
  const __m512 e = exp_clamped(_mm512_sub_ps(_mm512_setzero_ps(), g));
  return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}

}  // namespace

void swiglu_avx512(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, swiglu16(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(
        out + i, m, swiglu16(_mm512_maskz_loadu_ps(m, gate + i), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace kvforge
