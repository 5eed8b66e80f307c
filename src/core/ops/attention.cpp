#include "core/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kvforge {
namespace {

constexpr int kTile = 64;  // positions scored before one softmax rescale

float dot(const float* a, const float* b, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

}  // namespace

void attend_one_head(const float* q, const KvSpan* spans, size_t n_spans, int32_t n_keys,
                     int kv_head, int head_dim, KvFormat format, float scale, float* out,
                     float* scratch, const uint8_t* mask) {
  float* row = scratch;             // [head_dim]
  float* acc = scratch + head_dim;  // [head_dim] running sum of weights * V
  float* scores = acc + head_dim;   // [kTile]
  std::fill(acc, acc + head_dim, 0.0f);
  float running_max = -INFINITY;
  float running_sum = 0.0f;

  // Tiles are cut at absolute positions (multiples of kTile from 0), not at
  // span edges, so the sums are the same bits however the cache is split
  // into blocks.
  const uint8_t* k_rows[kTile];
  const uint8_t* v_rows[kTile];
  size_t span = 0;
  int32_t in_span = 0;  // position inside spans[span]
  for (int32_t t0 = 0; t0 < n_keys; t0 += kTile) {
    const int32_t tn = std::min<int32_t>(kTile, n_keys - t0);
    int32_t n_valid = 0;
    for (int32_t t = 0; t < tn; ++t) {
      while (span < n_spans && in_span >= spans[span].n) {
        ++span;
        in_span = 0;
      }
      if (span == n_spans) break;  // caller promised n_keys ≤ total; stay in bounds anyway
      const KvSpan& sp = spans[span];
      const size_t pos = size_t(in_span++);
      if (mask && !mask[t0 + t]) continue;
      k_rows[n_valid] = sp.k + pos * sp.k_pos_stride + size_t(kv_head) * sp.k_head_stride;
      v_rows[n_valid] = sp.v + pos * sp.v_pos_stride + size_t(kv_head) * sp.v_head_stride;
      ++n_valid;
    }
    if (n_valid == 0) continue;

    float tile_max = -INFINITY;
    for (int32_t t = 0; t < n_valid; ++t) {
      float sc;
      if (format.k == KvDtype::F32) {
        sc = dot(q, reinterpret_cast<const float*>(k_rows[t]), head_dim);
      } else {
        kv_decode_head(format.k, k_rows[t], row, head_dim);
        sc = dot(q, row, head_dim);
      }
      scores[t] = sc * scale;
      tile_max = std::max(tile_max, scores[t]);
    }
    const float new_max = std::max(running_max, tile_max);
    const float correction = std::exp(running_max - new_max);  // 0 on the first tile
    running_sum *= correction;
    for (int d = 0; d < head_dim; ++d) acc[d] *= correction;
    for (int32_t t = 0; t < n_valid; ++t) {
      const float w = std::exp(scores[t] - new_max);
      running_sum += w;
      const float* vrow = reinterpret_cast<const float*>(v_rows[t]);
      if (format.v != KvDtype::F32) {
        kv_decode_head(format.v, v_rows[t], row, head_dim);
        vrow = row;
      }
      for (int d = 0; d < head_dim; ++d) acc[d] += w * vrow[d];
    }
    running_max = new_max;
  }
  const float inv = 1.0f / running_sum;
  for (int d = 0; d < head_dim; ++d) out[d] = acc[d] * inv;
}

}  // namespace kvforge
