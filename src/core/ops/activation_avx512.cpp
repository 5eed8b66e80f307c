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

namespace kvforge {
namespace {

// e^x for any x, as the scalar level sees it where it matters here (1 + e^x):
// x is clamped to [-87, 100] (below, 1 + e^x is 1 all the same; above,
// e^x is +inf like std::exp's, through scalef), then e^x = 2^n * e^r with
// n = round(x / ln 2), |r| <= ln(2) / 2 and e^r a degree-6 Taylor polynomial
// (relative error ~2e-7). ln 2 is split in two parts so that n * ln 2 is
// subtracted exactly.
__m512 exp_clamped(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(100.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
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
