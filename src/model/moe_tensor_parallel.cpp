#include "model/moe_tensor_parallel.h"

#include <algorithm>

#include "core/formats/row_codec.h"

namespace kvforge {

WeightView row_range(const WeightView& m, int64_t first, int64_t rows) {
  const size_t rb = row_bytes(m.type, size_t(m.cols));
  return WeightView{m.type, static_cast<const uint8_t*>(m.data) + size_t(first) * rb, rows, m.cols};
}

namespace {

// Columns [first, first + n) of each row of a [rows][cols] table.
std::vector<float> table_columns(const std::vector<float>& table, int64_t rows, int64_t cols,
                                 int64_t first, int64_t n) {
  if (table.empty()) return table;
  std::vector<float> out(size_t(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(table.begin() + r * cols + first, n, out.begin() + r * n);
  return out;
}

}  // namespace

void keep_rank_experts(MoeWeights& m, const ModelConfig& c, const TensorSplit& s) {
  if (s.n_ranks == 1 || m.gate.empty()) return;
  const int64_t n = c.moe.n_expert;
  for (size_t e = 0; e < m.gate.size(); ++e) {
    m.gate[e] = row_range(m.gate[e], s.first_ff_exp(), s.n_ff_exp);
    m.up[e] = row_range(m.up[e], s.first_ff_exp(), s.n_ff_exp);
    m.down[e] = row_range(m.down[e], s.first_embd_row(), s.n_embd_rows);
  }
  m.gate_bias = table_columns(m.gate_bias, n, c.moe.n_ff_exp, s.first_ff_exp(), s.n_ff_exp);
  m.up_bias = table_columns(m.up_bias, n, c.moe.n_ff_exp, s.first_ff_exp(), s.n_ff_exp);
  m.down_bias = table_columns(m.down_bias, n, c.n_embd, s.first_embd_row(), s.n_embd_rows);
  if (m.shared_gate.data == nullptr) return;
  m.shared_gate = row_range(m.shared_gate, s.first_ff_shexp(), s.n_ff_shexp);
  m.shared_up = row_range(m.shared_up, s.first_ff_shexp(), s.n_ff_shexp);
  m.shared_down = row_range(m.shared_down, s.first_embd_row(), s.n_embd_rows);
}

void gather_columns(const MoeRanks& r, const float* mine, int64_t rows, int64_t cols, float* out) {
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
