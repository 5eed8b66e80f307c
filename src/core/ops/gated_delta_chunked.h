// The chunked (parallel) form of the delta rule of core/ops/gated_delta.h:
// the same outputs and final state for a run of tokens of one value head,
// computed kGatedDeltaChunk tokens at a time from the state at the chunk's
// start (Yang et al., "Gated Delta Networks", 2024, the WY form). With
// γ_t = exp(Σ_{s<=t} g_s) the decay from the chunk start through token t
// and Γ_ts = γ_t / γ_s:
//
//   u_t = β_t (v_t − γ_t S_0 k_t − Σ_{s<t} Γ_ts (k_t·k_s) u_s)   forward substitution
//   o_t = (γ_t S_0 q_t + Σ_{s<=t} Γ_ts (q_t·k_s) u_s) / sqrt(d)
//   S   = γ_n S_0 + Σ_s Γ_ns u_s k_sᵀ
//
// In exact arithmetic it equals the recurrence; in f32 it differs by
// rounding (its own order of sums and the exp of summed log decays), within
// the bound tests/core/ops/gated_delta_chunked_test.cpp states. Per token it
// costs about as many multiply-adds as the recurrence (3 d² + 1.5 C d vs
// 4 d²) in products of a chunk's tokens with the state.
//
// The model runs the recurrence (model/gated_delta_net.h): a chunk's result
// depends on where the chunk starts, so prefilling a prompt in pieces would
// change bits, which the engine's schedule invariance forbids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvforge {

inline constexpr int kGatedDeltaChunk = 64;

// Buffers for one head's chunk; reserve(d) sizes them.
struct GatedDeltaChunkScratch {
  std::vector<float> state_t, k_t, kk, kq, u, sq;
  void reserve(int d) {
    const size_t dd = size_t(d), c = size_t(kGatedDeltaChunk);
    state_t.resize(dd * dd);
    k_t.resize(dd * c);
    kk.resize(c * c);
    kq.resize(c * c);
    u.resize(c * dd);
    sq.resize(c * dd);
  }
};

// state [d][d] (row i: value dimension i); q, k, v, out: [n_tokens][d];
// decay_log, beta: [n_tokens]. Advances the state over the tokens.
using GatedDeltaChunkedFn = void(float* state, const float* q, const float* k, const float* v,
                                 const float* decay_log, const float* beta, int n_tokens, int d,
                                 float* out, GatedDeltaChunkScratch& scratch);
// The best level this machine runs.
GatedDeltaChunkedFn gated_delta_rule_chunked;
// The levels (tests and benchmarks compare them).
GatedDeltaChunkedFn gated_delta_rule_chunked_scalar;
GatedDeltaChunkedFn gated_delta_rule_chunked_avx2;
GatedDeltaChunkedFn gated_delta_rule_chunked_avx512;

}  // namespace kvforge
