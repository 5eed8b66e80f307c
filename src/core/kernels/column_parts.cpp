#include "core/kernels/column_parts.h"

#include <algorithm>
#include <cstring>

namespace kvforge {
namespace {

void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

void matmul_parts(const ColumnParts& w, const float* x, int64_t n_tokens, float* out,
                  ThreadPool& pool, MatmulScratch& scratch) {
  const size_t n = w.parts.size();
  if (n == 0 || n_tokens == 0) return;
  const int64_t pc = w.parts[0].cols;
  // x as [parts][n_tokens][pc]: already so for one token or one part.
  const float* xr = x;
  if (n_tokens > 1 && n > 1) {
    grow(scratch.part_x, size_t(n_tokens * w.cols));
    for (size_t p = 0; p < n; ++p)
      for (int64_t t = 0; t < n_tokens; ++t)
        std::memcpy(scratch.part_x.data() + (int64_t(p) * n_tokens + t) * pc,
                    x + t * w.cols + int64_t(p) * pc, sizeof(float) * size_t(pc));
    xr = scratch.part_x.data();
  }
  const size_t out_floats = size_t(n_tokens) * size_t(w.rows);
  MatmulOutput outputs[kMatmulBatchMaxWeights];
  for (size_t p0 = 0; p0 < n; p0 += kMatmulBatchMaxWeights) {
    const size_t k = std::min(kMatmulBatchMaxWeights, n - p0);
    for (size_t i = 0; i < k; ++i) outputs[i] = {w.parts[p0 + i], out + (p0 + i) * out_floats};
    matmul_batch_own_tokens(std::span(outputs, k), xr + int64_t(p0) * n_tokens * pc, n_tokens, pool,
                            scratch);
  }
}

void sum_parts(const float* in, int n_parts, size_t count, float* y) {
  if (y != in) std::memcpy(y, in, sizeof(float) * count);
  for (int p = 1; p < n_parts; ++p) {
    const float* part = in + size_t(p) * count;
    for (size_t i = 0; i < count; ++i) y[i] += part[i];
  }
}

void matmul_column_parts(const ColumnParts& w, const float* x, int64_t n_tokens, float* y,
                         ThreadPool& pool, MatmulScratch& scratch) {
  const int n = int(w.parts.size());
  const size_t count = size_t(n_tokens) * size_t(w.rows);
  if (n == 1) return matmul(w.parts[0], x, n_tokens, y, pool, scratch);
  grow(scratch.part_y, size_t(n) * count);
  matmul_parts(w, x, n_tokens, scratch.part_y.data(), pool, scratch);
  sum_parts(scratch.part_y.data(), n, count, y);
}

size_t matmul_scratch_bytes(const ColumnParts& w, int64_t n_tokens) {
  size_t bytes = 0;
  for (const WeightView& part : w.parts)
    bytes = std::max(bytes, matmul_scratch_bytes(part, n_tokens));
  return bytes;
}

}  // namespace kvforge
