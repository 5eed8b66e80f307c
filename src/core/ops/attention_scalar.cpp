// Reference tile step: decode each record with kv_decode_head, plain loops,
// std::exp. The SIMD paths are tested against it.
#include <algorithm>
#include <cmath>

#include "core/ops/attention.h"
#include "core/ops/attention_tile.h"

namespace kvforge::attention_detail {
namespace {

float dot(const float* a, const float* b, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// The record as f32: the record itself for f32, else decoded into `row`.
const float* as_floats(KvDtype t, const uint8_t* record, float* row, int head_dim) {
  if (t == KvDtype::F32) return reinterpret_cast<const float*>(record);
  kv_decode_head(t, record, row, head_dim);
  return row;
}

}  // namespace

void attend_tile_scalar(const TileJob& job) {
  const int hd = job.head_dim;
  for (int t = 0; t < job.n; ++t) {
    const float* k = as_floats(job.format.k, job.k_rows[t], job.row, hd);
    for (int j = 0; j < job.n_q; ++j)
      job.scores[j * kAttentionTile + t] = dot(job.q + size_t(j) * hd, k, hd) * job.scale;
  }
  soft_cap_scores(job);
  for (int j = 0; j < job.n_q; ++j) {
    float* s = job.scores + j * kAttentionTile;
    const float tile_max = *std::max_element(s, s + job.n);
    const float new_max = std::max(job.running_max[j], tile_max);
    const float correction = std::exp(job.running_max[j] - new_max);  // 0 on the first tile
    job.running_sum[j] *= correction;
    float* acc = job.acc + size_t(j) * hd;
    for (int d = 0; d < hd; ++d) acc[d] *= correction;
    for (int t = 0; t < job.n; ++t) {
      s[t] = std::exp(s[t] - new_max);
      job.running_sum[j] += s[t];
    }
    job.running_max[j] = new_max;
  }
  for (int t = 0; t < job.n; ++t) {
    const float* v = as_floats(job.format.v, job.v_rows[t], job.row, hd);
    for (int j = 0; j < job.n_q; ++j) {
      const float w = job.scores[j * kAttentionTile + t];
      float* acc = job.acc + size_t(j) * hd;
      for (int d = 0; d < hd; ++d) acc[d] += w * v[d];
    }
  }
}

}  // namespace kvforge::attention_detail
