// SwiGLU gating: h = silu(gate) * up, silu(x) = x / (1 + e^-x).
//
// A decode step gates n_ff values per layer on one thread, and std::exp per
// element is a visible share of that step (docs/bench/design-measurements.md),
// so the AVX2 / AVX-512 levels evaluate e^x as a polynomial, 8 / 16 lanes at a
// time (core/ops/avx512_exp.h, avx2_exp.h: relative error ~2e-7, +inf where
// std::exp overflows): the results differ from the scalar reference by
// float rounding only. Each element's result depends on its own inputs only,
// not on n or its index.
#pragma once

#include <cstdint>

namespace kvforge {

// gate, up, out: [n]; out may alias gate. At the level simd_level() picks.
void swiglu(const float* gate, const float* up, int64_t n, float* out);

// The levels (tests compare them; the SIMD ones only where the CPU has them).
void swiglu_scalar(const float* gate, const float* up, int64_t n, float* out);
void swiglu_avx2(const float* gate, const float* up, int64_t n, float* out);
void swiglu_avx512(const float* gate, const float* up, int64_t n, float* out);

// gpt-oss's clamped SwiGLU, as llama.cpp's swiglu_oai computes it (alpha
// 1.702, limit 7): x = min(gate, 7), y = clamp(up, -7, 7),
// h = x · sigmoid(1.702 x) · (y + 1). Scalar (one call per MoE step's rows).
// out may alias gate.
void swiglu_oai(const float* gate, const float* up, int64_t n, float* out);

// The tanh form of GELU: x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))), in f32.
float gelu_tanh(float x);

// GELU gating (gemma): h = gelu(gate) * up, with gelu as llama.cpp's CPU code
// computes it, so that gemma files give llama.cpp's tokens: gate ≤ −10 gives
// 0, gate ≥ 10 gives gate, and between, the gate is rounded to f16 and looked
// up in a table of gelu_tanh of every f16 value rounded to f16 (a relative
// error up to ~2^-10 against gelu_tanh in f32; the models run in bf16, whose
// rounding is coarser still). A table lookup per element, one thread. out may
// alias gate.
void geglu(const float* gate, const float* up, int64_t n, float* out);

}  // namespace kvforge
