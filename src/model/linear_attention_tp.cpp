#include "model/linear_attention_tp.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "core/formats/row_codec.h"

namespace kvforge {
namespace {

using RowRanges = std::vector<std::pair<int64_t, int64_t>>;  // (first row, rows)

// The whole model's value head of local value head `hl` on rank `rank` of
// `n_ranks` (local: that rank's head counts; model/linear_attention_tp.h).
int global_value_head(const LinearAttentionConfig& local, int rank, int n_ranks, int hl) {
  if (local.grouped_heads) return rank * local.n_v_heads + hl;
  const int nk = local.n_k_heads;  // per rank
  return (hl / nk) * nk * n_ranks + rank * nk + hl % nk;
}

// The rows of `per_head` rows each of this rank's value heads, from row `first` on.
RowRanges value_rows(const LinearAttentionConfig& local, const TensorSplit& s, int64_t first,
                     int64_t per_head) {
  RowRanges r;
  for (int hl = 0; hl < local.n_v_heads; ++hl)
    r.emplace_back(first + global_value_head(local, s.rank, s.n_ranks, hl) * per_head, per_head);
  return r;
}

size_t rows_bytes(const WeightView& m, const RowRanges& ranges) {
  int64_t rows = 0;
  for (const auto& [first, n] : ranges) rows += n;
  return (row_bytes(m.type, size_t(m.cols)) * size_t(rows) + 63) & ~size_t(63);
}

// The rows `ranges` of m, in that order, copied to `at` (advanced past them).
WeightView copy_rows(const WeightView& m, const RowRanges& ranges, uint8_t*& at) {
  const size_t rb = row_bytes(m.type, size_t(m.cols));
  WeightView out{m.type, at, 0, m.cols};
  for (const auto& [first, n] : ranges) {
    std::memcpy(at + size_t(out.rows) * rb,
                static_cast<const uint8_t*>(m.data) + size_t(first) * rb, size_t(n) * rb);
    out.rows += n;
  }
  at += rows_bytes(m, ranges);
  return out;
}

// The entries `ranges` of a [rows][cols] f32 table, in that order.
std::vector<float> pick_rows(const std::vector<float>& v, int64_t cols, const RowRanges& ranges) {
  std::vector<float> out;
  for (const auto& [first, n] : ranges)
    out.insert(out.end(), v.begin() + first * cols, v.begin() + (first + n) * cols);
  return out;
}

}  // namespace

void keep_rank_linear(LinearAttentionWeights& l, const ModelConfig& c, const TensorSplit& s) {
  if (s.n_ranks == 1 || l.qkv.data == nullptr) return;
  const LinearAttentionConfig local = s.rank_config(c).linear;
  const int64_t d = c.linear.head_dim, kd = c.linear.key_dim();
  const int64_t k0 = int64_t(s.rank) * local.n_k_heads, nk = local.n_k_heads;
  RowRanges channels = {{k0 * d, nk * d}, {kd + k0 * d, nk * d}};  // q, k of its key heads
  for (const auto& r : value_rows(local, s, 2 * kd, d)) channels.push_back(r);
  const RowRanges heads = value_rows(local, s, 0, 1);
  const RowRanges gate = value_rows(local, s, 0, d);
  const int64_t ba = 2 * int64_t(c.linear.heads_per_key());  // ssm_ba rows per key head
  const RowRanges beta_alpha = {{k0 * ba, nk * ba}};
  size_t bytes = rows_bytes(l.qkv, channels) + rows_bytes(l.gate, gate);
  if (c.linear.grouped_heads)
    bytes += rows_bytes(l.beta_alpha, beta_alpha);
  else
    bytes += rows_bytes(l.beta, heads) + rows_bytes(l.alpha, heads);
  l.rank_rows = HugePageBuffer(bytes);
  uint8_t* at = l.rank_rows.data();
  l.qkv = copy_rows(l.qkv, channels, at);
  l.gate = copy_rows(l.gate, gate, at);
  if (c.linear.grouped_heads) {
    l.beta_alpha = copy_rows(l.beta_alpha, beta_alpha, at);
  } else {
    l.beta = copy_rows(l.beta, heads, at);
    l.alpha = copy_rows(l.alpha, heads, at);
  }
  l.conv = pick_rows(l.conv, c.linear.conv_kernel, channels);
  l.dt_bias = pick_rows(l.dt_bias, 1, heads);
  l.a = pick_rows(l.a, 1, heads);
  l.out = row_range(l.out, s.first_embd_row(), s.n_embd_rows);
}

void linear_output_tp(const ModelConfig& c, const LinearAttentionWeights& w, const TpRanks& r,
                      const float* heads, int64_t n_tokens, GatedDeltaNetScratch& s,
                      ThreadPool& pool, MatmulScratch& ms, float* proj) {
  const LinearAttentionConfig& local = c.linear;
  const int n = r.split.n_ranks;
  const int64_t d = local.head_dim, vd = local.value_dim(), block = n_tokens * vd;
  if (r.ex.gathered.size() < size_t(n * block)) r.ex.gathered.resize(size_t(n * block));
  std::copy_n(heads, block, r.ex.gathered.data() + r.split.rank * block);
  r.comm.all_gather(r.ex.gathered.data(), size_t(block));
  s.heads_all.resize(size_t(block * n));
  for (int k = 0; k < n; ++k)
    for (int64_t t = 0; t < n_tokens; ++t)
      for (int hl = 0; hl < local.n_v_heads; ++hl)
        std::copy_n(r.ex.gathered.data() + k * block + t * vd + hl * d, d,
                    s.heads_all.data() + t * vd * n + global_value_head(local, k, n, hl) * d);
  s.proj_rows.resize(size_t(n_tokens * r.split.n_embd_rows));
  matmul(w.out, s.heads_all.data(), n_tokens, s.proj_rows.data(), pool, ms);
  gather_columns(r, s.proj_rows.data(), n_tokens, r.split.n_embd_rows, proj);
}

}  // namespace kvforge
