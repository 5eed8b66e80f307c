#include "core/ops/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

// The dimension whose wavelength makes `turns` turns over n_ctx_orig
// positions, in float as ggml computes it (the ramp's ends are floored and
// ceiled, so they must round the same way).
float yarn_corr_dim(int rope_dim, int32_t n_ctx_orig, float turns, float base) {
  return float(rope_dim) *
         std::log(float(n_ctx_orig) / (turns * 2.0f * std::numbers::pi_v<float>)) /
         (2.0f * std::log(base));
}

}  // namespace

RopeTable::RopeTable(int rope_dim, const RopeConfig& c, bool neox,
                     std::span<const float> freq_factors)
    : rope_dim_(rope_dim),
      neox_(neox),
      freq_scale_(c.freq_scale),
      magnitude_(c.attn_factor),
      inv_freq_(size_t(rope_dim / 2)),
      extrap_mix_(size_t(rope_dim / 2), 0.0) {
  if (!freq_factors.empty() && freq_factors.size() != size_t(rope_dim / 2))
    throw std::invalid_argument("RoPE: " + std::to_string(freq_factors.size()) +
                                " frequency factors for " + std::to_string(rope_dim / 2) +
                                " pairs");
  for (int i = 0; i < rope_dim / 2; ++i) {
    const double ff = freq_factors.empty() ? 1.0 : double(freq_factors[size_t(i)]);
    inv_freq_[size_t(i)] = std::pow(double(c.freq_base), -2.0 * i / double(rope_dim)) / ff;
  }
  if (c.ext_factor != 0.0f) {
    const float lo =
        std::max(0.0f, std::floor(yarn_corr_dim(rope_dim, c.n_ctx_orig, c.beta_fast, c.freq_base)));
    const float hi =
        std::min(float(rope_dim - 1),
                 std::ceil(yarn_corr_dim(rope_dim, c.n_ctx_orig, c.beta_slow, c.freq_base)));
    for (int i = 0; i < rope_dim / 2; ++i) {
      const float y = (float(i) - lo) / std::max(0.001f, hi - lo);
      extrap_mix_[size_t(i)] = double((1.0f - std::min(1.0f, std::max(0.0f, y))) * c.ext_factor);
    }
    magnitude_ *= double(1.0f + 0.1f * std::log(1.0f / c.freq_scale));
  }
}

void RopeTable::angles(int32_t pos, float* cos_sin) const {
  for (int i = 0; i < n_pairs(); ++i) {
    const double extrap = double(pos) * inv_freq_[size_t(i)];
    const double mix = extrap_mix_[size_t(i)];
    const double angle = freq_scale_ * extrap * (1.0 - mix) + extrap * mix;
    cos_sin[2 * i] = float(std::cos(angle) * magnitude_);
    cos_sin[2 * i + 1] = float(std::sin(angle) * magnitude_);
  }
}

void RopeTable::apply(float* heads, int n_heads, int head_dim, const float* cos_sin) const {
  const int half = n_pairs();
  for (int h = 0; h < n_heads; ++h) {
    float* x = heads + size_t(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
      const int a = neox_ ? i : 2 * i;
      const int b = neox_ ? i + half : 2 * i + 1;
      const float x0 = x[a], x1 = x[b];
      x[a] = x0 * c - x1 * s;
      x[b] = x0 * s + x1 * c;
    }
  }
}

}  // namespace kvforge
