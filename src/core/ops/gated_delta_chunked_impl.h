// The chunked form of the delta rule (gated_delta_chunked.h), written once
// for every SIMD level: each level's .cpp includes this header compiled with
// its own flags (everything here has internal linkage, so the levels never
// share a copy). Every inner loop is an axpy over a contiguous row (no
// reductions), so the compiler vectorizes it at each level without
// reordering any sum. Private to core/ops/gated_delta_chunked*.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/ops/gated_delta_chunked.h"

namespace kvforge {
namespace {

// dst[0..n) += a · src[0..n)
inline void axpy(float* dst, const float* src, float a, int n) {
  for (int i = 0; i < n; ++i) dst[i] += a * src[i];
}

// One chunk's inputs: n tokens of [d] rows, and cum[t] = log γ_t.
struct Chunk {
  const float* q;
  const float* k;
  const float* v;
  const float* beta;
  int n, d;
  float cum[kGatedDeltaChunk];
};

// Sᵀ and Kᵀ (so every product below is an axpy), the cumulative log decays,
// zeroed accumulators.
inline void prepare(const float* state, const float* decay_log, Chunk& c,
                    GatedDeltaChunkScratch& w) {
  const size_t dd = size_t(c.d), n = size_t(c.n);
  for (size_t i = 0; i < dd; ++i)
    for (size_t j = 0; j < dd; ++j) w.state_t[j * dd + i] = state[i * dd + j];
  for (size_t t = 0; t < n; ++t)
    for (size_t j = 0; j < dd; ++j) w.k_t[j * n + t] = c.k[t * dd + j];
  for (int t = 0; t < c.n; ++t) c.cum[t] = (t > 0 ? c.cum[t - 1] : 0.0f) + decay_log[t];
  std::fill_n(w.kk.begin(), n * n, 0.0f);
  std::fill_n(w.kq.begin(), n * n, 0.0f);
  std::fill_n(w.u.begin(), n * dd, 0.0f);
  std::fill_n(w.sq.begin(), n * dd, 0.0f);
}

// Token t's products with the chunk-start state and the earlier keys, then
// its write u_t = β_t (v_t − γ_t S_0 k_t − Σ_{s<t} Γ_ts (k_t·k_s) u_s).
inline void write_of(const Chunk& c, int t, GatedDeltaChunkScratch& w) {
  const size_t dd = size_t(c.d), n = size_t(c.n), ts = size_t(t);
  const float* kr = c.k + ts * dd;
  const float* qr = c.q + ts * dd;
  float* ut = w.u.data() + ts * dd;  // S_0 k_t first
  for (size_t j = 0; j < dd; ++j) {
    axpy(ut, w.state_t.data() + j * dd, kr[j], c.d);
    axpy(w.sq.data() + ts * dd, w.state_t.data() + j * dd, qr[j], c.d);
    axpy(w.kk.data() + ts * n, w.k_t.data() + j * n, kr[j], t);
    axpy(w.kq.data() + ts * n, w.k_t.data() + j * n, qr[j], t + 1);
  }
  const float gt = std::exp(c.cum[t]);
  for (size_t i = 0; i < dd; ++i) ut[i] *= -gt;
  for (int s = 0; s < t; ++s)
    axpy(ut, w.u.data() + size_t(s) * dd, -std::exp(c.cum[t] - c.cum[s]) * w.kk[ts * n + size_t(s)],
         c.d);
  const float* vr = c.v + ts * dd;
  for (size_t i = 0; i < dd; ++i) ut[i] = c.beta[t] * (vr[i] + ut[i]);
}

// o_t = (γ_t S_0 q_t + Σ_{s<=t} Γ_ts (q_t·k_s) u_s) / sqrt(d)
inline void output_of(const Chunk& c, int t, const GatedDeltaChunkScratch& w, float* o) {
  const size_t dd = size_t(c.d), ts = size_t(t);
  const float gt = std::exp(c.cum[t]);
  for (size_t i = 0; i < dd; ++i) o[i] = gt * w.sq[ts * dd + i];
  for (int s = 0; s <= t; ++s)
    axpy(o, w.u.data() + size_t(s) * dd,
         std::exp(c.cum[t] - c.cum[s]) * w.kq[ts * size_t(c.n) + size_t(s)], c.d);
  const float scale = 1.0f / std::sqrt(float(c.d));
  for (size_t i = 0; i < dd; ++i) o[i] *= scale;
}

// S = γ_n S_0 + Σ_s Γ_ns u_s k_sᵀ; row i: γ_n S_0[i] + Σ_s (Γ_ns u_s[i]) k_s.
inline void advance(const Chunk& c, const GatedDeltaChunkScratch& w, float* state) {
  const size_t dd = size_t(c.d);
  const float last = c.cum[c.n - 1], gn = std::exp(last);
  for (size_t i = 0; i < dd; ++i) {
    float* row = state + i * dd;
    for (size_t j = 0; j < dd; ++j) row[j] *= gn;
    for (int s = 0; s < c.n; ++s)
      axpy(row, c.k + size_t(s) * dd, std::exp(last - c.cum[s]) * w.u[size_t(s) * dd + i], c.d);
  }
}

// All tokens, chunk by chunk.
inline void delta_rule_chunked_all(float* state, const float* q, const float* k, const float* v,
                                   const float* decay_log, const float* beta, int n_tokens, int d,
                                   float* out, GatedDeltaChunkScratch& w) {
  w.reserve(d);
  for (int t0 = 0; t0 < n_tokens; t0 += kGatedDeltaChunk) {
    const size_t at = size_t(t0) * size_t(d);
    Chunk c{q + at, k + at, v + at, beta + t0, std::min(kGatedDeltaChunk, n_tokens - t0), d, {}};
    prepare(state, decay_log + t0, c, w);
    for (int t = 0; t < c.n; ++t) write_of(c, t, w);
    for (int t = 0; t < c.n; ++t) output_of(c, t, w, out + at + size_t(t) * size_t(d));
    advance(c, w, state);
  }
}

}  // namespace
}  // namespace kvforge
