#include "model/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/formats/row_codec.h"
#include "model/forward_steps.h"
#include "model/moe_tensor_parallel.h"

namespace kvforge {
namespace {

// The order picks follow: larger logit first, ties to the lower index; a NaN
// counts as -inf, so the order is total and k distinct experts are picked.
bool before(float a, int ia, float b, int ib) {
  const float inf = std::numeric_limits<float>::infinity();
  if (std::isnan(a)) a = -inf;
  if (std::isnan(b)) b = -inf;
  return a > b || (a == b && ia < ib);
}

// experts[0..k) = the k first experts in before()'s order: each pick is the
// first of those after the previous one, so no marks are needed.
void pick_top_k(const float* logits, int n, int k, int32_t* experts) {
  for (int j = 0; j < k; ++j) {
    int best = -1;
    for (int i = 0; i < n; ++i) {
      if (j > 0 && !before(logits[experts[j - 1]], experts[j - 1], logits[i], i)) continue;
      if (best < 0 || before(logits[i], i, logits[best], best)) best = i;
    }
    experts[j] = best;
  }
}

// exp(l[idx[j]] - max) / sum over the m entries, as ggml's soft_max: the
// sum in double, its f32 inverse multiplied in.
void softmax_of(const float* logits, const int32_t* idx, int m, const int32_t* all, int n_all,
                float* out) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n_all; ++i) mx = std::max(mx, logits[all ? all[i] : i]);
  double sum = 0;
  for (int i = 0; i < n_all; ++i) sum += double(std::exp(logits[all ? all[i] : i] - mx));
  const float inv = float(1.0 / sum);
  for (int j = 0; j < m; ++j) out[j] = std::exp(logits[idx[j]] - mx) * inv;
}

}  // namespace

void route_token(const MoeConfig& m, const float* logits, int32_t* experts, float* weights) {
  const int k = m.n_expert_used;
  pick_top_k(logits, m.n_expert, k, experts);
  if (m.gating == ExpertGating::SoftmaxThenTopK)
    softmax_of(logits, experts, k, nullptr, m.n_expert, weights);
  else
    softmax_of(logits, experts, k, experts, k, weights);
  if (m.norm_topk) {
    float sum = 0;
    for (int j = 0; j < k; ++j) sum += weights[j];
    sum = std::max(sum, 6.103515625e-5f);  // llama.cpp's clamp: the smallest normal f16
    for (int j = 0; j < k; ++j) weights[j] /= sum;
  }
  if (m.weights_scale != 1.0f)
    for (int j = 0; j < k; ++j) weights[j] *= m.weights_scale;
}

void MoeScratch::reserve(const ModelConfig& c, int max_tokens) {
  if (c.moe.n_expert == 0 || max_tokens <= capacity) return;
  const size_t n = size_t(max_tokens), e = size_t(c.moe.n_expert);
  const size_t pairs = n * size_t(c.moe.n_expert_used);
  logits.resize(n * e);
  experts.resize(pairs);
  weights.resize(pairs);
  first.resize(e + 1);
  next.resize(e);
  row_of.resize(pairs);
  x.resize(pairs * size_t(c.n_embd));
  gate.resize(pairs * size_t(c.moe.n_ff_exp));
  up.resize(pairs * size_t(c.moe.n_ff_exp));
  y.resize(pairs * size_t(c.n_embd));
  if (const size_t sff = size_t(c.moe.n_ff_shexp); sff > 0) {
    shared_logit.resize(n);
    shared_gate.resize(n * sff);
    shared_up.resize(n * sff);
    shared_y.resize(n * size_t(c.n_embd));
  }
  if (c.arch == Architecture::Gemma4) {
    for (std::vector<float>* v : {&branch_in, &router_in, &branch_out}) v->resize(n * c.n_embd);
    branch_rows.resize(n);
  }
  capacity = max_tokens;
}

namespace {

// Routes every token and groups the (token, pick) pairs by expert:
// s.first[e] .. s.first[e + 1] are expert e's rows (its tokens ascending),
// s.row_of the row of each pair, s.x the pairs' inputs in row order.
void route_and_group(const ModelConfig& c, const float* xn, int64_t n, MoeScratch& s) {
  const int k = c.moe.n_expert_used, e_count = c.moe.n_expert;
  for (int64_t t = 0; t < n; ++t)
    route_token(c.moe, s.logits.data() + t * e_count, s.experts.data() + t * k,
                s.weights.data() + t * k);
  std::fill(s.first.begin(), s.first.begin() + e_count + 1, 0);
  for (int64_t p = 0; p < n * k; ++p) ++s.first[size_t(s.experts[size_t(p)]) + 1];
  for (int e = 0; e < e_count; ++e) s.first[size_t(e) + 1] += s.first[size_t(e)];
  std::copy_n(s.first.begin(), e_count, s.next.begin());
  for (int64_t p = 0; p < n * k; ++p) {
    const int32_t row = s.next[size_t(s.experts[size_t(p)])]++;
    s.row_of[size_t(p)] = row;
    std::copy_n(xn + (p / k) * c.n_embd, c.n_embd, s.x.data() + int64_t(row) * c.n_embd);
  }
}

// A run of experts whose rows follow each other, each with `count` rows.
struct ExpertRun {
  int32_t first_row = 0;
  int32_t count = 0;
  int n = 0;
  int32_t experts[kMatmulBatchMaxWeights] = {};
};

// `proj` of each expert of the run on its own rows of `in` ([rows][in_cols])
// into `out` ([rows][out_cols]): one parallel region for the whole run.
void run_matmul(const ExpertRun& r, const std::vector<WeightView>& proj, const float* in,
                int64_t in_cols, float* out, int64_t out_cols, ThreadPool& pool,
                MatmulScratch& ms) {
  MatmulOutput outputs[kMatmulBatchMaxWeights];
  for (int i = 0; i < r.n; ++i)
    outputs[i] = {proj[size_t(r.experts[i])],
                  out + (r.first_row + int64_t(i) * r.count) * out_cols};
  matmul_batch_own_tokens(std::span(outputs, size_t(r.n)), in + r.first_row * in_cols, r.count,
                          pool, ms);
}

// The runs of consecutive selected experts with equal row counts, at most
// kMatmulBatchMaxWeights each, in expert order.
template <class F>
void for_each_run(const MoeConfig& m, const std::vector<int32_t>& first, F&& fn) {
  ExpertRun r;
  for (int e = 0; e < m.n_expert; ++e) {
    const int32_t count = first[size_t(e) + 1] - first[size_t(e)];
    if (count == 0) continue;
    if (r.n > 0 && (count != r.count || r.n == int(kMatmulBatchMaxWeights))) {
      fn(r);
      r.n = 0;
    }
    if (r.n == 0) r = ExpertRun{first[size_t(e)], count, 0, {}};
    r.experts[r.n++] = e;
  }
  if (r.n > 0) fn(r);
}

// Rows [r0, r1) of the grouped gate and up products += their expert's
// biases (gpt-oss); an expert's rows are first[e] .. first[e + 1].
void add_expert_biases(const MoeConfig& m, const MoeWeights& w, MoeScratch& s, int32_t r0,
                       int32_t r1) {
  const int64_t ff = m.n_ff_exp;
  const auto experts_end = s.first.begin() + m.n_expert + 1;
  for (int32_t r = r0; r < r1; ++r) {
    const int64_t e = std::upper_bound(s.first.begin(), experts_end, r) - s.first.begin() - 1;
    float* gate = s.gate.data() + int64_t(r) * ff;
    float* up = s.up.data() + int64_t(r) * ff;
    for (int64_t i = 0; i < ff; ++i) {
      gate[i] += w.gate_bias[size_t(e * ff + i)];
      up[i] += w.up_bias[size_t(e * ff + i)];
    }
  }
}

// out [n][dl] += the shared expert's gated output (moe_ffn.h), as llama.cpp
// adds it: the expert's output times the sigmoid, then the sum. dl: the
// output rows this rank computes (n_embd on one process).
void add_shared_expert(const ModelConfig& c, const MoeWeights& w, const float* xn, int64_t n,
                       float* out, int64_t dl, MoeScratch& s, ThreadPool& pool, MatmulScratch& ms,
                       const TpRanks* ranks) {
  const int64_t ff = c.moe.n_ff_shexp;
  const MatmulOutput in[] = {{w.shared_gate_inp, s.shared_logit.data()},
                             {w.shared_gate, s.shared_gate.data()},
                             {w.shared_up, s.shared_up.data()}};
  matmul_batch(in, xn, n, pool, ms);
  pool.parallel_for(size_t(n), [&](size_t t0, size_t t1) {
    gated_activation(c, s.shared_gate.data() + int64_t(t0) * ff,
                     s.shared_up.data() + int64_t(t0) * ff, int64_t(t1 - t0) * ff);
  });
  const float* h = s.shared_gate.data();
  if (ranks) {  // every rank's columns of h, for this rank's output rows
    s.shared_h.resize(size_t(n * ff * ranks->split.n_ranks));
    gather_columns(*ranks, h, n, ff, s.shared_h.data());
    h = s.shared_h.data();
  }
  matmul(w.shared_down, h, n, s.shared_y.data(), pool, ms);
  pool.parallel_for(size_t(n), [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      const float g = 1.0f / (1.0f + std::exp(-s.shared_logit[t]));
      const float* y = s.shared_y.data() + int64_t(t) * dl;
      float* o = out + int64_t(t) * dl;
      for (int64_t i = 0; i < dl; ++i) o[i] += y[i] * g;
    }
  });
}

// The selected experts' gate and up products of the grouped rows, their
// biases (gpt-oss) and the activation: s.gate [rows][n_ff_exp] = h.
void expert_gate_up(const ModelConfig& c, const MoeWeights& w, int64_t n_tokens, MoeScratch& s,
                    ThreadPool& pool, MatmulScratch& ms) {
  const MoeConfig& m = c.moe;
  const int64_t d = c.n_embd, ff = m.n_ff_exp, rows = n_tokens * m.n_expert_used;
  for_each_run(m, s.first, [&](const ExpertRun& r) {
    // Where every expert of the run reads the same rows of s.x (a lone
    // expert; a one-token step, whose pairs' rows all hold that token), the
    // gate and up products run in one region, the input converted once.
    if ((r.n == 1 || n_tokens == 1) && 2 * size_t(r.n) <= kMatmulBatchMaxWeights) {
      MatmulOutput gate_up[kMatmulBatchMaxWeights];
      for (int i = 0; i < r.n; ++i) {
        const int64_t at = (r.first_row + int64_t(i) * r.count) * ff;
        gate_up[2 * i] = {w.gate[size_t(r.experts[i])], s.gate.data() + at};
        gate_up[2 * i + 1] = {w.up[size_t(r.experts[i])], s.up.data() + at};
      }
      matmul_batch(std::span(gate_up, size_t(2 * r.n)), s.x.data() + r.first_row * d, r.count, pool,
                   ms);
      return;
    }
    run_matmul(r, w.gate, s.x.data(), d, s.gate.data(), ff, pool, ms);
    run_matmul(r, w.up, s.x.data(), d, s.up.data(), ff, pool, ms);
  });
  pool.parallel_for(size_t(rows), [&](size_t r0, size_t r1) {
    if (!w.gate_bias.empty()) add_expert_biases(m, w, s, int32_t(r0), int32_t(r1));
    gated_activation(c, s.gate.data() + int64_t(r0) * ff, s.up.data() + int64_t(r0) * ff,
                     int64_t(r1 - r0) * ff);
  });
}

// out [n_tokens][dl] = each token's k expert outputs s.y (+ their biases,
// times their scales) times their weights, added in pick order.
void add_picks(const MoeConfig& m, const MoeWeights& w, int64_t n_tokens, int64_t dl, MoeScratch& s,
               ThreadPool& pool, float* out) {
  const int k = m.n_expert_used;
  pool.parallel_for(size_t(n_tokens), [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      float* o = out + int64_t(t) * dl;
      for (int j = 0; j < k; ++j) {
        const size_t pick = t * size_t(k) + size_t(j);
        const float wj = s.weights[pick];
        float* y = s.y.data() + int64_t(s.row_of[pick]) * dl;
        if (!w.down_bias.empty()) {  // the expert's output bias, before its weight (llama.cpp)
          const float* b = w.down_bias.data() + int64_t(s.experts[pick]) * dl;
          for (int64_t i = 0; i < dl; ++i) y[i] += b[i];
        }
        if (!w.down_scale.empty()) {  // the expert's output scale, before its weight (llama.cpp)
          const float scale = w.down_scale[size_t(s.experts[pick])];
          for (int64_t i = 0; i < dl; ++i) y[i] *= scale;
        }
        if (j == 0)
          for (int64_t i = 0; i < dl; ++i) o[i] = wj * y[i];
        else
          for (int64_t i = 0; i < dl; ++i) o[i] += wj * y[i];
      }
    }
  });
}

}  // namespace

void moe_ffn(const ModelConfig& c, const MoeWeights& w, const float* xn, int64_t n_tokens,
             float* out, MoeScratch& s, ThreadPool& pool, MatmulScratch& ms, const TpRanks* ranks,
             const float* router_in) {
  const MoeConfig& m = c.moe;
  const int64_t ff = m.n_ff_exp, rows = n_tokens * m.n_expert_used;
  if (!ranks && !w.down.empty() && w.down.front().rows != c.n_embd)
    throw std::logic_error("moe_ffn: a rank's share of the experts needs its TpRanks");
  s.reserve(c, int(n_tokens));
  matmul(w.router, router_in ? router_in : xn, n_tokens, s.logits.data(), pool, ms);
  add_bias(s.logits.data(), w.router_bias, n_tokens);
  route_and_group(c, xn, n_tokens, s);
  expert_gate_up(c, w, n_tokens, s, pool, ms);
  // On several ranks: every rank's columns of h, this rank's output rows
  // (model/moe_tensor_parallel.h).
  const float* h = s.gate.data();
  const int64_t n_ranks = ranks ? ranks->split.n_ranks : 1;
  const int64_t dl = ranks ? ranks->split.n_embd_rows : c.n_embd;
  if (ranks) {
    s.h.resize(size_t(rows * ff * n_ranks));
    gather_columns(*ranks, h, rows, ff, s.h.data());
    h = s.h.data();
  }
  for_each_run(m, s.first, [&](const ExpertRun& r) {
    run_matmul(r, w.down, h, ff * n_ranks, s.y.data(), dl, pool, ms);
  });
  if (ranks) s.out_rows.resize(size_t(n_tokens * dl));
  float* o = ranks ? s.out_rows.data() : out;
  add_picks(m, w, n_tokens, dl, s, pool, o);
  if (m.n_ff_shexp > 0) add_shared_expert(c, w, xn, n_tokens, o, dl, s, pool, ms, ranks);
  if (ranks) gather_columns(*ranks, o, n_tokens, dl, out);
}

size_t moe_ffn_scratch_bytes(const ModelConfig& c, const MoeWeights& w, int64_t n_tokens) {
  const int64_t pairs = n_tokens * c.moe.n_expert_used;
  const MatmulOutput gate_up[] = {{w.gate[0]}, {w.up[0]}};  // all experts share their types
  size_t bytes = std::max({matmul_scratch_bytes(w.router, n_tokens),
                           matmul_batch_scratch_bytes(gate_up, pairs),
                           matmul_scratch_bytes(w.down[0], pairs)});
  if (c.moe.n_ff_shexp > 0) {
    const MatmulOutput shared[] = {{w.shared_gate_inp}, {w.shared_gate}, {w.shared_up}};
    bytes = std::max({bytes, matmul_batch_scratch_bytes(shared, n_tokens),
                      matmul_scratch_bytes(w.shared_down, n_tokens)});
  }
  return bytes;
}

std::vector<WeightView> expert_slabs(GgmlType type, const void* data, int64_t n, int64_t rows,
                                     int64_t cols) {
  const size_t slab = row_bytes(type, size_t(cols)) * size_t(rows);
  std::vector<WeightView> out;
  for (int64_t e = 0; e < n; ++e)
    out.push_back(
        WeightView{type, static_cast<const uint8_t*>(data) + size_t(e) * slab, rows, cols});
  return out;
}

}  // namespace kvforge
