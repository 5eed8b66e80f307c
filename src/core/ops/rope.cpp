#include "core/ops/rope.h"

#include <cmath>

namespace kvforge {

RopeTable::RopeTable(int rope_dim, float freq_base, bool neox)
    : rope_dim_(rope_dim), neox_(neox), inv_freq_(size_t(rope_dim / 2)) {
  for (int i = 0; i < rope_dim / 2; ++i)
    inv_freq_[size_t(i)] = std::pow(double(freq_base), -2.0 * i / double(rope_dim));
}

void RopeTable::angles(int32_t pos, float* cos_sin) const {
  for (int i = 0; i < n_pairs(); ++i) {
    const double angle = double(pos) * inv_freq_[size_t(i)];
    cos_sin[2 * i] = float(std::cos(angle));
    cos_sin[2 * i + 1] = float(std::sin(angle));
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
