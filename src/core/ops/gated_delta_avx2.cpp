// The delta rule of one token and one value head, 8 lanes (gated_delta.h).
// Each row of the state is scaled, dotted with k, corrected and dotted with q
// in 8-lane pieces; the last d % 8 entries follow in scalar code, added after
// the vector sum. Four rows go through together (independent sums, so the
// adds of one row hide the latency of another's); a row's result is the same
// alone or in a group.
#include <cmath>

#include "core/kernels/avx2_helpers.h"
#include "core/ops/gated_delta.h"

namespace kvforge {
namespace {

struct Row8 {
  const float* q;
  const float* k;
  float decay;
  int vec;  // entries in whole 8-lane pieces
};

// Rows [i, i + R) of `state` [d][d]: decay, delta rule, S q.
template <int R>
void rows(const Row8& r, float* state, const float* v, float beta, float scale, int d, int i,
          float* out) {
  const __m256 decay = _mm256_set1_ps(r.decay);
  float* row[R];
  __m256 acc[R];
  for (int j = 0; j < R; ++j) row[j] = state + int64_t(i + j) * d, acc[j] = _mm256_setzero_ps();
  for (int c = 0; c < r.vec; c += 8) {
    const __m256 k = _mm256_loadu_ps(r.k + c);
    for (int j = 0; j < R; ++j) {
      const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(row[j] + c), decay);
      _mm256_storeu_ps(row[j] + c, s);
      acc[j] = _mm256_fmadd_ps(s, k, acc[j]);
    }
  }
  float delta[R];
  for (int j = 0; j < R; ++j) {
    float sk = avx2_hsum(acc[j]);
    for (int c = r.vec; c < d; ++c) {
      row[j][c] *= r.decay;
      sk += row[j][c] * r.k[c];
    }
    delta[j] = (v[i + j] - sk) * beta;
    acc[j] = _mm256_setzero_ps();
  }
  for (int c = 0; c < r.vec; c += 8) {
    const __m256 k = _mm256_loadu_ps(r.k + c), q = _mm256_loadu_ps(r.q + c);
    for (int j = 0; j < R; ++j) {
      const __m256 s = _mm256_fmadd_ps(_mm256_set1_ps(delta[j]), k, _mm256_loadu_ps(row[j] + c));
      _mm256_storeu_ps(row[j] + c, s);
      acc[j] = _mm256_fmadd_ps(s, q, acc[j]);
    }
  }
  for (int j = 0; j < R; ++j) {
    float sq = avx2_hsum(acc[j]);
    for (int c = r.vec; c < d; ++c) {
      row[j][c] += delta[j] * r.k[c];
      sq += row[j][c] * r.q[c];
    }
    out[i + j] = sq * scale;
  }
}

}  // namespace

void gated_delta_rule_token_avx2(float* state, const float* q, const float* k, const float* v,
                                 float decay_log, float beta, int d, float* out) {
  const Row8 r{q, k, std::exp(decay_log), d / 8 * 8};
  const float scale = 1.0f / std::sqrt(float(d));
  int i = 0;
  for (; i + 4 <= d; i += 4) rows<4>(r, state, v, beta, scale, d, i, out);
  for (; i < d; ++i) rows<1>(r, state, v, beta, scale, d, i, out);
}

}  // namespace kvforge
