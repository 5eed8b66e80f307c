#include "model/moe_tensor_parallel.h"

#include <algorithm>

namespace kvforge {

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

}  // namespace kvforge
