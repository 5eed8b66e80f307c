#include "core/ops/attention.h"

#include <algorithm>
#include <cmath>

#include "core/cpu_features.h"
#include "core/ops/attention_tile.h"

namespace kvforge {
namespace {

using attention_detail::TileJob;
using TileFn = void (*)(const TileJob&);

TileFn tile_function() {
  switch (simd_level()) {
    case SimdLevel::Avx512:
      return attention_detail::attend_tile_avx512;
    case SimdLevel::Avx2:
      return attention_detail::attend_tile_avx2;
    case SimdLevel::Scalar:
      break;
  }
  return attention_detail::attend_tile_scalar;
}

// Up to kAttentionHeadsPerPass heads over all tiles: one read of the records.
void attend_pass(const float* q, int n_q, const KvSpan* spans, size_t n_spans, int32_t n_keys,
                 int kv_head, int head_dim, KvFormat format, float scale, float* out,
                 float* scratch, const uint8_t* mask, TileFn tile) {
  constexpr int kTile = kAttentionTile;
  const size_t hd = size_t(head_dim);
  TileJob job;
  job.q = q;
  job.n_q = n_q;
  job.head_dim = head_dim;
  job.format = format;
  job.scale = scale;
  job.acc = scratch;                                              // [n_q][head_dim]
  job.row = job.acc + kAttentionHeadsPerPass * hd;                // [head_dim]
  job.scores = job.row + hd;                                      // [n_q][kTile]
  job.running_max = job.scores + kAttentionHeadsPerPass * kTile;  // [n_q]
  job.running_sum = job.running_max + kAttentionHeadsPerPass;     // [n_q]
  std::fill(job.acc, job.acc + size_t(n_q) * hd, 0.0f);
  std::fill(job.running_max, job.running_max + n_q, -INFINITY);
  std::fill(job.running_sum, job.running_sum + n_q, 0.0f);

  // Tiles are cut at absolute positions (multiples of kTile from 0), not at
  // span edges, so the sums are the same bits however the cache is split
  // into blocks; masked positions are dropped before the tile code sees them.
  const uint8_t* k_rows[kTile];
  const uint8_t* v_rows[kTile];
  job.k_rows = k_rows;
  job.v_rows = v_rows;
  size_t span = 0;
  int32_t in_span = 0;  // position inside spans[span]
  for (int32_t t0 = 0; t0 < n_keys; t0 += kTile) {
    const int32_t tn = std::min<int32_t>(kTile, n_keys - t0);
    int n_valid = 0;
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
    job.n = n_valid;
    tile(job);
  }
  for (int j = 0; j < n_q; ++j) {
    const float inv = 1.0f / job.running_sum[j];
    const float* acc = job.acc + size_t(j) * hd;
    float* o = out + size_t(j) * hd;
    for (size_t d = 0; d < hd; ++d) o[d] = acc[d] * inv;
  }
}

}  // namespace

void attend_heads(const float* q, int n_q, const KvSpan* spans, size_t n_spans, int32_t n_keys,
                  int kv_head, int head_dim, KvFormat format, float scale, float* out,
                  float* scratch, const uint8_t* mask) {
  const TileFn tile = tile_function();
  for (int j0 = 0; j0 < n_q; j0 += kAttentionHeadsPerPass) {
    const int n = std::min(kAttentionHeadsPerPass, n_q - j0);
    const size_t offset = size_t(j0) * size_t(head_dim);
    attend_pass(q + offset, n, spans, n_spans, n_keys, kv_head, head_dim, format, scale,
                out + offset, scratch, mask, tile);
  }
}

}  // namespace kvforge
