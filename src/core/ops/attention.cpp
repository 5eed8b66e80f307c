#include "core/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/formats/row_codec.h"

namespace kvforge {
namespace {

constexpr int kTile = 64;  // positions scored before one softmax rescale

void load_row(KvDtype dtype, const uint8_t* src, float* dst, int n) {
  if (dtype == KvDtype::F32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
  } else {
    dequantize_row(GgmlType::F16, src, dst, n);
  }
}

float dot(const float* a, const float* b, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

}  // namespace

size_t kv_dtype_bytes(KvDtype t) { return t == KvDtype::F32 ? 4 : 2; }
const char* kv_dtype_name(KvDtype t) { return t == KvDtype::F32 ? "f32" : "f16"; }

void attend_one_head(const float* q, const KvSpan* spans, size_t n_spans, int32_t n_keys,
                     int kv_head, int head_dim, KvDtype dtype, float scale, float* out,
                     float* scratch) {
  float* row = scratch;             // [head_dim]
  float* acc = scratch + head_dim;  // [head_dim] running sum of weights * V
  float* scores = acc + head_dim;   // [kTile]
  std::fill(acc, acc + head_dim, 0.0f);
  float running_max = -INFINITY;
  float running_sum = 0.0f;

  int32_t remaining = n_keys;
  for (size_t s = 0; s < n_spans && remaining > 0; ++s) {
    const KvSpan& span = spans[s];
    const int32_t n = std::min(span.n, remaining);
    const uint8_t* k_base = span.k + size_t(kv_head) * span.head_stride;
    const uint8_t* v_base = span.v + size_t(kv_head) * span.head_stride;
    for (int32_t t0 = 0; t0 < n; t0 += kTile) {
      const int32_t tn = std::min<int32_t>(kTile, n - t0);
      float tile_max = -INFINITY;
      for (int32_t t = 0; t < tn; ++t) {
        const uint8_t* k = k_base + size_t(t0 + t) * span.pos_stride;
        float sc;
        if (dtype == KvDtype::F32) {
          sc = dot(q, reinterpret_cast<const float*>(k), head_dim);
        } else {
          load_row(dtype, k, row, head_dim);
          sc = dot(q, row, head_dim);
        }
        scores[t] = sc * scale;
        tile_max = std::max(tile_max, scores[t]);
      }
      const float new_max = std::max(running_max, tile_max);
      const float correction = std::exp(running_max - new_max);  // 0 on the first tile
      running_sum *= correction;
      for (int d = 0; d < head_dim; ++d) acc[d] *= correction;
      for (int32_t t = 0; t < tn; ++t) {
        const float w = std::exp(scores[t] - new_max);
        running_sum += w;
        const uint8_t* v = v_base + size_t(t0 + t) * span.pos_stride;
        const float* vrow = reinterpret_cast<const float*>(v);
        if (dtype != KvDtype::F32) {
          load_row(dtype, v, row, head_dim);
          vrow = row;
        }
        for (int d = 0; d < head_dim; ++d) acc[d] += w * vrow[d];
      }
      running_max = new_max;
    }
    remaining -= n;
  }
  const float inv = 1.0f / running_sum;
  for (int d = 0; d < head_dim; ++d) out[d] = acc[d] * inv;
}

}  // namespace kvforge
