#include "model/forward_steps.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/formats/row_codec.h"
#include "core/ops/activation.h"
#include "core/ops/norm.h"

namespace kvforge {

Communicator& one_process_communicator() {
  static SingleProcessCommunicator alone;
  return alone;
}

void check_communicator(const Model& model, const Communicator& comm, const char* who) {
  const TensorSplit& s = model.split();
  if (comm.size() != s.n_ranks || comm.rank() != s.rank)
    throw std::invalid_argument(std::string(who) + ": the model was loaded as rank " +
                                std::to_string(s.rank) + " of " + std::to_string(s.n_ranks) +
                                ", the communicator is rank " + std::to_string(comm.rank()) +
                                " of " + std::to_string(comm.size()));
}

void embed_token(const Model& model, int32_t token, float* x) {
  const ModelConfig& c = model.rank_config();
  const WeightView& e = model.weights().token_embd;
  const size_t rb = row_bytes(e.type, size_t(e.cols));
  dequantize_row(e.type, static_cast<const uint8_t*>(e.data) + size_t(token) * rb, x, c.n_embd);
  if (c.embd_scale != 1.0f)
    for (int i = 0; i < c.n_embd; ++i) x[i] *= c.embd_scale;
}

void add_bias(float* y, const std::vector<float>& bias, int64_t rows) {
  if (bias.empty()) return;
  const size_t d = bias.size();
  for (int64_t t = 0; t < rows; ++t)
    for (size_t i = 0; i < d; ++i) y[size_t(t) * d + i] += bias[i];
}

void norm_heads(const ModelConfig& c, float* heads, int n_heads, const std::vector<float>& weight) {
  for (int h = 0; h < n_heads; ++h) {
    float* x = heads + size_t(h) * size_t(c.head_dim);
    rms_norm(x, weight.data(), c.head_dim, c.rms_eps, x);
  }
}

void rope_token(const Model& model, int layer, float* q, float* k, const float* cs) {
  const ModelConfig& c = model.layer_config(layer);
  const RopeTable& rope = model.rope(layer);
  rope.apply(q, c.n_head, c.head_dim, cs);
  if (k) rope.apply(k, c.n_kv_head, c.head_dim, cs);
}

void gated_activation(const ModelConfig& c, float* gate, const float* up, int64_t n) {
  if (c.ffn_act == FfnActivation::GeluTanh)
    geglu(gate, up, n, gate);
  else if (c.ffn_act == FfnActivation::SwigluOai)
    swiglu_oai(gate, up, n, gate);
  else
    swiglu(gate, up, n, gate);
}

void soft_cap_logits(const ModelConfig& c, float* logits, int64_t n) {
  if (c.final_softcap <= 0.0f) return;
  const float cap = c.final_softcap, inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) logits[i] = cap * std::tanh(logits[i] * inv);
}

void row_parallel_matmul(const TensorSplit& split, Communicator& comm, const ColumnParts& w,
                         int total_parts, const float* x, int64_t rows, float* out, TpExchange& ex,
                         ThreadPool& pool, MatmulScratch& scratch, ForwardTimes* times) {
  if (split.n_ranks == 1) {
    const PhaseTimer t(times ? &times->weight_matmuls : nullptr);
    matmul_column_parts(w, x, rows, out, pool, scratch);
    return;
  }
  const size_t count = size_t(rows) * size_t(w.rows);
  const size_t local = w.parts.size();
  if (ex.gathered.size() < size_t(total_parts) * count)
    ex.gathered.resize(size_t(total_parts) * count);
  {
    const PhaseTimer t(times ? &times->weight_matmuls : nullptr);
    matmul_parts(w, x, rows, ex.gathered.data() + size_t(split.rank) * local * count, pool,
                 scratch);
  }
  {
    const PhaseTimer t(times ? &times->communication : nullptr);
    comm.all_gather(ex.gathered.data(), local * count);
  }
  sum_parts(ex.gathered.data(), total_parts, count, out);
}

float* vocab_slice(const TensorSplit& split, int64_t rows, int64_t n_vocab, size_t extra,
                   TpExchange& ex) {
  ex.gathered.resize(std::max(ex.gathered.size(), size_t(rows) * size_t(n_vocab) + extra));
  return ex.gathered.data() + size_t(rows) * size_t(split.vocab_first[size_t(split.rank)]);
}

void gather_vocab_logits(const TensorSplit& split, Communicator& comm, int64_t rows,
                         int64_t n_vocab, TpExchange& ex, float* logits, ForwardTimes* times) {
  ex.counts.clear();
  for (int64_t v : split.vocab_rows) ex.counts.push_back(rows * v);
  {
    const PhaseTimer t(times ? &times->communication : nullptr);
    comm.all_gather_v(ex.gathered.data(), ex.counts);
  }
  for (size_t k = 0; k < split.vocab_rows.size(); ++k) {
    const int64_t first = split.vocab_first[k], n = split.vocab_rows[k];
    const float* block = ex.gathered.data() + size_t(rows) * size_t(first);
    for (int64_t i = 0; i < rows; ++i) std::copy_n(block + i * n, n, logits + i * n_vocab + first);
  }
}

}  // namespace kvforge
