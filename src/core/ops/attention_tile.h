// Internal to the attention kernel: one tile of positions, handed by the
// span walk (attention.cpp) to the per-ISA tile code. Not for other callers.
//
// Per head j the tile step is the online-softmax update
//   m' = max(m, max_t s[j][t]),  c = exp(m - m'),
//   sum = sum·c + Σ_t exp(s[j][t] - m'),  acc[j] = acc[j]·c + Σ_t exp(s[j][t] - m')·V[t]
// with s[j][t] = scale · q[j]·K[t].
#pragma once

#include <cstdint>

#include "core/formats/kv_format.h"

namespace kvforge::attention_detail {

struct TileJob {
  const float* q = nullptr;  // [n_q][head_dim]
  int n_q = 0;               // ≤ kAttentionMaxStackedHeads (attend_queries stacks runs)
  int head_dim = 0;
  KvFormat format;
  float scale = 0;
  const uint8_t* const* k_rows = nullptr;  // [n] K records of the tile's valid positions
  const uint8_t* const* v_rows = nullptr;  // [n] V records
  int n = 0;                               // 1..kAttentionTile
  float* acc = nullptr;                    // [n_q][head_dim] running Σ weight·V
  float* running_max = nullptr;            // [n_q]
  float* running_sum = nullptr;            // [n_q]
  float* scores = nullptr;                 // [n_q][kAttentionTile] scratch
  float* row = nullptr;                    // [head_dim] scratch: one decoded record (scalar)
};

// All three leave the same state up to float rounding; each is deterministic
// given the job (no dependence on how positions reached the tile).
void attend_tile_scalar(const TileJob& job);
void attend_tile_avx2(const TileJob& job);
void attend_tile_avx512(const TileJob& job);

}  // namespace kvforge::attention_detail
