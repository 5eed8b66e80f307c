// Internal to the attention kernel: one tile of positions, handed by the
// span walk (attention.cpp) to the per-ISA tile code. Not for other callers.
//
// Per head j the tile step is the online-softmax update
//   m' = max(m, max_t s[j][t]),  c = exp(m - m'),
//   sum = sum·c + Σ_t exp(s[j][t] - m'),  acc[j] = acc[j]·c + Σ_t exp(s[j][t] - m')·V[t]
// with s[j][t] = scale · q[j]·K[t].
#pragma once

#include <cmath>
#include <cstdint>

#include "core/formats/kv_format.h"
#include "core/ops/attention.h"

namespace kvforge::attention_detail {

struct TileJob {
  const float* q = nullptr;  // [n_q][head_dim]
  int n_q = 0;               // ≤ kAttentionMaxStackedHeads (attend_queries stacks runs)
  int head_dim = 0;
  KvFormat format;
  float scale = 0;
  float softcap = 0;  // > 0: scores are soft-capped (soft_cap_scores) before the softmax
  const uint8_t* const* k_rows = nullptr;  // [n] K records of the tile's valid positions
  const uint8_t* const* v_rows = nullptr;  // [n] V records
  int n = 0;                               // 1..kAttentionTile
  float* acc = nullptr;                    // [n_q][head_dim] running Σ weight·V
  float* running_max = nullptr;            // [n_q]
  float* running_sum = nullptr;            // [n_q]
  float* scores = nullptr;                 // [n_q][kAttentionTile] scratch
  float* row = nullptr;                    // [head_dim] scratch: one decoded record (scalar)
};

// s → softcap · tanh(s / softcap) over the tile's scores, one plain loop
// shared by every path (a no-op without a cap).
inline void soft_cap_scores(const TileJob& job) {
  if (job.softcap <= 0.0f) return;
  const float inv = 1.0f / job.softcap;
  for (int j = 0; j < job.n_q; ++j) {
    float* s = job.scores + j * kAttentionTile;
    for (int t = 0; t < job.n; ++t) s[t] = job.softcap * std::tanh(s[t] * inv);
  }
}

// All three leave the same state up to float rounding; each is deterministic
// given the job (no dependence on how positions reached the tile).
void attend_tile_scalar(const TileJob& job);
void attend_tile_avx2(const TileJob& job);
void attend_tile_avx512(const TileJob& job);

}  // namespace kvforge::attention_detail
