#include "core/ops/gated_delta.h"

#include <cmath>

#include "core/cpu_features.h"
#include "core/ops/norm.h"

namespace kvforge {
namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }

}  // namespace

void causal_conv1d_silu_token(const float* x, const float* w, int64_t channels, int kernel,
                              float* window, float* out) {
  const int kept = kernel - 1;
  for (int64_t c = 0; c < channels; ++c) {
    const float* wc = w + c * kernel;
    float* win = window + c * kept;
    float sum = 0.0f;
    for (int j = 0; j < kept; ++j) sum += win[j] * wc[j];
    sum += x[c] * wc[kept];
    for (int j = 0; j + 1 < kept; ++j) win[j] = win[j + 1];
    if (kept > 0) win[kept - 1] = x[c];
    out[c] = silu(sum);
  }
}

void l2_norm(float* x, int64_t n, float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float scale = float(1.0 / std::sqrt(ss + double(eps)));
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

void gated_delta_rule_token_scalar(float* state, const float* q, const float* k, const float* v,
                                   float decay_log, float beta, int d, float* out) {
  const float decay = std::exp(decay_log);
  const float scale = 1.0f / std::sqrt(float(d));
  for (int i = 0; i < d; ++i) {
    float* row = state + int64_t(i) * d;
    float sk = 0.0f;
    for (int j = 0; j < d; ++j) {
      row[j] *= decay;
      sk += row[j] * k[j];
    }
    const float delta = (v[i] - sk) * beta;
    float sq = 0.0f;
    for (int j = 0; j < d; ++j) {
      row[j] += delta * k[j];
      sq += row[j] * q[j];
    }
    out[i] = sq * scale;
  }
}

void gated_delta_rule_token(float* state, const float* q, const float* k, const float* v,
                            float decay_log, float beta, int d, float* out) {
  switch (simd_level()) {
    case SimdLevel::Avx512:
      return gated_delta_rule_token_avx512(state, q, k, v, decay_log, beta, d, out);
    case SimdLevel::Avx2:
      return gated_delta_rule_token_avx2(state, q, k, v, decay_log, beta, d, out);
    case SimdLevel::Scalar:
      break;
  }
  gated_delta_rule_token_scalar(state, q, k, v, decay_log, beta, d, out);
}

void gated_rms_norm(const float* x, const float* weight, const float* gate, int64_t n, float eps,
                    float* y) {
  rms_norm(x, weight, n, eps, y);
  for (int64_t i = 0; i < n; ++i) y[i] *= silu(gate[i]);
}

}  // namespace kvforge
