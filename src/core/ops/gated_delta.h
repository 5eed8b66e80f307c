// The per-token pieces of a Gated DeltaNet layer (Qwen 3.5's linear
// attention; Yang et al., "Gated Delta Networks", 2024), on f32 rows.
// Each output depends on its own inputs only, in a fixed order, so results
// are the same bits for every thread count, batch composition and prefill
// chunking. The delta rule, the hot loop of both prefill and decode, has
// AVX2 / AVX-512 levels (simd_level() picks one per process); the scalar
// code is their reference, and they differ from it by summation order only.
//
// For one value head with state S [d_v][d_k] and one token (q, k l2-normed):
//   S ← exp(g) · S                  decay, g = -exp(A_log) · softplus(alpha + dt_bias) < 0
//   δ = β · (v − S k)               the delta rule's correction, β = sigmoid(beta) in (0, 1)
//   S ← S + δ kᵀ                    write
//   o = (S q) / sqrt(d_k)
#pragma once

#include <cstdint>

namespace kvforge {

// Causal depthwise conv1d over one token, then SiLU: for each channel c,
// out[c] = silu(Σ_j w[c][j] · in_j) over the window in = (window[c][0..K-2],
// x[c]) oldest first; then the window slides by one (x[c] becomes its newest
// entry). x, out: [channels]; w: [channels][K]; window: [channels][K - 1].
void causal_conv1d_silu_token(const float* x, const float* w, int64_t channels, int kernel,
                              float* window, float* out);

// x [n] ← x / sqrt(Σ x² + eps), as llama.cpp's Gated DeltaNet l2 norm.
void l2_norm(float* x, int64_t n, float eps);

// log(1 + e^x), as ggml computes it (x itself above 20).
float softplus(float x);

// One token through one value head's delta rule (above): state [d][d]
// (row i: value dimension i), q, k, v: [d]; out [d] = S q / sqrt(d).
void gated_delta_rule_token(float* state, const float* q, const float* k, const float* v,
                            float decay_log, float beta, int d, float* out);
// The levels (tests compare them; the SIMD ones only where the CPU has them).
void gated_delta_rule_token_scalar(float* state, const float* q, const float* k, const float* v,
                                   float decay_log, float beta, int d, float* out);
void gated_delta_rule_token_avx2(float* state, const float* q, const float* k, const float* v,
                                 float decay_log, float beta, int d, float* out);
void gated_delta_rule_token_avx512(float* state, const float* q, const float* k, const float* v,
                                   float decay_log, float beta, int d, float* out);

// y [n] = rms_norm(x) · weight · silu(gate): the gated RMS norm of the heads'
// outputs (x, y may alias).
void gated_rms_norm(const float* x, const float* weight, const float* gate, int64_t n, float eps,
                    float* y);

}  // namespace kvforge
