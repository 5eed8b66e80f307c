#include "model/tp_ranks.h"

#include <algorithm>

#include "core/formats/row_codec.h"

namespace kvforge {

WeightView row_range(const WeightView& m, int64_t first, int64_t rows) {
  const size_t rb = row_bytes(m.type, size_t(m.cols));
  return WeightView{m.type, static_cast<const uint8_t*>(m.data) + size_t(first) * rb, rows, m.cols};
}

void gather_columns(const TpRanks& r, const float* mine, int64_t rows, int64_t cols, float* out) {
  const int n = r.split.n_ranks;
  const size_t block = size_t(rows * cols);
  if (r.ex.gathered.size() < size_t(n) * block) r.ex.gathered.resize(size_t(n) * block);
  std::copy_n(mine, block, r.ex.gathered.data() + size_t(r.split.rank) * block);
  r.comm.all_gather(r.ex.gathered.data(), block);
  for (int k = 0; k < n; ++k)
    for (int64_t t = 0; t < rows; ++t)
      std::copy_n(r.ex.gathered.data() + size_t(k) * block + size_t(t * cols), cols,
                  out + t * n * cols + k * cols);
}

}  // namespace kvforge
