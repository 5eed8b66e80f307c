#include <stdexcept>
#include <vector>

#include "core/formats/row_codec.h"
#include "core/kernels/matmul.h"

namespace kvforge {

void matmul_reference(const WeightView& w, const float* x, int64_t n_tokens, float* y) {
  if (w.layout != WeightLayout::Native)
    throw std::invalid_argument("matmul_reference: reads weights in their native layout only");
  std::vector<float> row(size_t(w.cols));
  const size_t rb = row_bytes(w.type, size_t(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + size_t(r) * rb, row.data(),
                   w.cols);
    for (int64_t t = 0; t < n_tokens; ++t) {
      double acc = 0;
      for (int64_t c = 0; c < w.cols; ++c) acc += double(row[size_t(c)]) * x[t * w.cols + c];
      y[t * w.rows + r] = float(acc);
    }
  }
}

}  // namespace kvforge
