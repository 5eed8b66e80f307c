#include "core/kernels/matmul.h"

#include <vector>

#include "core/formats/row_codec.h"

namespace kvforge {

// Temporary generic path until the per-type kernels land: dequantize each
// weight row once, then reuse it for every token.
size_t matmul_scratch_bytes(const WeightView& w, int64_t) { return size_t(w.cols) * sizeof(float) * 2; }

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatmulScratch&) {
  pool.parallel_for(size_t(w.rows), [&](size_t r0, size_t r1) {
    std::vector<float> row(size_t(w.cols));
    const size_t rb = row_bytes(w.type, size_t(w.cols));
    for (size_t r = r0; r < r1; ++r) {
      dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + r * rb, row.data(), w.cols);
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float* xt = x + t * w.cols;
        float acc = 0;
        for (int64_t c = 0; c < w.cols; ++c) acc += row[c] * xt[c];
        y[t * w.rows + int64_t(r)] = acc;
      }
    }
  });
}

void matmul_reference(const WeightView& w, const float* x, int64_t n_tokens, float* y) {
  std::vector<float> row(size_t(w.cols));
  const size_t rb = row_bytes(w.type, size_t(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + size_t(r) * rb, row.data(), w.cols);
    for (int64_t t = 0; t < n_tokens; ++t) {
      double acc = 0;
      for (int64_t c = 0; c < w.cols; ++c) acc += double(row[c]) * x[t * w.cols + c];
      y[t * w.rows + r] = float(acc);
    }
  }
}

}  // namespace kvforge
