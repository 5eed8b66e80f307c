// The delta rule of one token and one value head, 16 lanes (gated_delta.h).
// Each row of the state is scaled, dotted with k, corrected and dotted with q
// in 16-lane pieces, the last d % 16 through masked loads and stores. Four
// rows go through together (independent sums, so the adds of one row hide
// the latency of another's); a row's result is the same alone or in a group.
#include <cmath>

#include "core/kernels/avx512_helpers.h"
#include "core/ops/gated_delta.h"

namespace kvforge {
namespace {

struct Row16 {
  const float* q;
  const float* k;
  __m512 decay;
  int full;        // whole 16-lane pieces
  __mmask16 tail;  // lanes of the last piece
  __mmask16 mask(int c) const { return c < full ? __mmask16(0xFFFF) : tail; }
};

// Rows [i, i + R) of `state` [d][d]: decay, delta rule, S q.
template <int R>
void rows(const Row16& r, float* state, const float* v, float beta, float scale, int d, int i,
          float* out) {
  float* row[R];
  __m512 acc[R];
  for (int j = 0; j < R; ++j) row[j] = state + int64_t(i + j) * d, acc[j] = _mm512_setzero_ps();
  for (int c = 0; c <= r.full; ++c) {
    const __mmask16 m = r.mask(c);
    const __m512 k = _mm512_maskz_loadu_ps(m, r.k + 16 * c);
    for (int j = 0; j < R; ++j) {
      const __m512 s = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row[j] + 16 * c), r.decay);
      _mm512_mask_storeu_ps(row[j] + 16 * c, m, s);
      acc[j] = _mm512_fmadd_ps(s, k, acc[j]);
    }
  }
  __m512 delta[R];
  for (int j = 0; j < R; ++j) {
    delta[j] = _mm512_set1_ps((v[i + j] - avx512_hsum(acc[j])) * beta);
    acc[j] = _mm512_setzero_ps();
  }
  for (int c = 0; c <= r.full; ++c) {
    const __mmask16 m = r.mask(c);
    const __m512 k = _mm512_maskz_loadu_ps(m, r.k + 16 * c);
    const __m512 q = _mm512_maskz_loadu_ps(m, r.q + 16 * c);
    for (int j = 0; j < R; ++j) {
      const __m512 s = _mm512_fmadd_ps(delta[j], k, _mm512_maskz_loadu_ps(m, row[j] + 16 * c));
      _mm512_mask_storeu_ps(row[j] + 16 * c, m, s);
      acc[j] = _mm512_fmadd_ps(s, q, acc[j]);
    }
  }
  for (int j = 0; j < R; ++j) out[i + j] = avx512_hsum(acc[j]) * scale;
}

}  // namespace

void gated_delta_rule_token_avx512(float* state, const float* q, const float* k, const float* v,
                                   float decay_log, float beta, int d, float* out) {
  const Row16 r{q, k, _mm512_set1_ps(std::exp(decay_log)), d / 16,
                __mmask16((1u << (d % 16)) - 1u)};
  const float scale = 1.0f / std::sqrt(float(d));
  int i = 0;
  for (; i + 4 <= d; i += 4) rows<4>(r, state, v, beta, scale, d, i, out);
  for (; i < d; ++i) rows<1>(r, state, v, beta, scale, d, i, out);
}

}  // namespace kvforge
