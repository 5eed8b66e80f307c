// e^x, 16 lanes, for the *_avx512.cpp files only (`static inline`: each
// includer gets its own private copy, never linked into other code paths).
//
// For x in [-87, 100], which the caller clamps to: e^x = 2^n * e^r with
// n = round(x / ln 2), |r| <= ln(2) / 2, e^r a degree-6 Taylor polynomial
// (relative error ~2e-7) and 2^n applied by scalef (so x > 88.72 gives +inf,
// like std::exp). ln 2 is split in two parts so n * ln 2 is subtracted exactly.
#pragma once

#include <immintrin.h>

namespace kvforge {

static inline __m512 avx512_exp(__m512 x) {
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

}  // namespace kvforge
