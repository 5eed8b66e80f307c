// SwiGLU gating: h = silu(gate) * up, silu(x) = x / (1 + e^-x).
#pragma once

#include <cmath>
#include <cstdint>

namespace kvforge {

// gate, up, out: [n]; out may alias gate.
inline void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace kvforge
