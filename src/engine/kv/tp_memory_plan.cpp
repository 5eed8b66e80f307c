#include "engine/kv/tp_memory_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_kv_projection(const std::string& name) {
  for (const char* t : {"attn_k.weight", "attn_v.weight", "attn_k.bias", "attn_v.bias"})
    if (ends_with(name, t)) return true;
  return false;
}

bool is_whole(const std::string& name, const gguf::TensorInfo& t) {
  // Vectors (norms, biases of row-parallel outputs), the embedding table, a
  // mixture's router (every rank picks the experts) and Gemma 4's per-layer
  // embeddings (every rank adds them to its whole residual stream).
  for (const char* tail : {"ffn_gate_inp.weight", "per_layer_token_embd.weight",
                           "per_layer_model_proj.weight", ".inp_gate.weight", ".proj.weight"})
    if (ends_with(name, tail)) return true;
  return t.dims.size() < 2 || name == "token_embd.weight";
}

[[noreturn]] void refuse(int tp, const std::string& why) {
  throw std::invalid_argument("tensor parallelism over " + std::to_string(tp) + " ranks: " + why);
}

// The FFN (dense rows, or each expert's rows and outputs) and the
// linear-attention key heads divide evenly, as model/tensor_split.h requires.
void check_ffn_and_linear(const ModelShape& s, int tp) {
  const auto need = [&](int64_t n, const std::string& what) {
    if (n % tp != 0) refuse(tp, "the " + std::to_string(n) + " " + what + " do not divide evenly");
  };
  if (s.n_expert == 0 || s.experts_beside_ffn) {
    need(s.n_ff, "FFN rows (n_ff)");
    if (s.n_ff_min > 0) need(s.n_ff_min, "FFN rows of the narrowest layers");
  }
  if (s.n_expert > 0) {
    need(s.n_ff_exp, "rows of each expert");
    need(s.n_ff_shexp, "rows of the shared expert");
    need(s.n_embd, "embedding rows (each expert's outputs)");
  }
  if (s.n_recurrent_layers > 0) need(s.linear.n_k_heads, "linear-attention key heads");
}

// A rank's KV heads of `count` (whole ones, or with more ranks than heads
// one replicated); `kind` names the layers for messages.
struct KvShare {
  int64_t per_rank = 1, replicas = 1;
};
KvShare kv_share(int64_t count, int tp, const std::string& kind) {
  if (count >= tp) {
    if (count % tp != 0)
      refuse(tp, "the" + kind + " " + std::to_string(count) + " KV heads do not divide evenly");
    return {count / tp, 1};
  }
  if (tp % count != 0)
    refuse(tp, "more ranks than the" + kind + " " + std::to_string(count) +
                   " KV heads, and not a multiple of them (each KV head is replicated on "
                   "the same number of ranks)");
  return {1, tp / count};
}

}  // namespace

WeightSplitBytes weight_split_bytes(const ModelShape& s, GgmlType matrix_type) {
  const TypeTraits tr = type_traits(matrix_type);
  const auto bytes = [&](int64_t elems) {
    return uint64_t(elems / int64_t(tr.block_elems)) * tr.block_bytes;
  };
  const int64_t kv = s.n_kv_layers() * 2 * s.n_embd * s.n_kv_head * s.head_dim;
  // A mixture's routers (and shared-expert gates) are whole on every rank.
  const int64_t routers =
      s.n_expert > 0 ? s.n_layer * s.n_embd * (s.n_expert + (s.n_ff_shexp > 0 ? 1 : 0)) : 0;
  const int64_t whole = s.n_vocab * s.n_embd + routers;
  WeightSplitBytes w;
  w.whole = bytes(whole) + uint64_t(s.n_norm_params()) * 4;
  w.kv_heads = bytes(kv);
  w.divided = bytes(s.n_matrix_params() - whole - kv);  // the output too, when not tied
  return w;
}

WeightSplitBytes weight_split_bytes(const gguf::GgufFile& file) {
  WeightSplitBytes w;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (is_kv_projection(t.name))
      w.kv_heads += t.n_bytes;
    else if (is_whole(t.name, t))
      w.whole += t.n_bytes;
    else
      w.divided += t.n_bytes;
  }
  return w;
}

TpRankPlan plan_tp_rank(const ModelShape& s, const WeightSplitBytes& w, int tp) {
  if (tp < 1) refuse(tp, "must be at least 1");
  if (s.n_head % tp != 0)
    refuse(tp, "the " + std::to_string(s.n_head) + " query heads do not divide evenly");
  check_ffn_and_linear(s, tp);
  TpRankPlan p;
  p.tp = tp;
  const bool two_counts = s.n_kv_head_swa > 0;
  const KvShare full = kv_share(s.n_kv_head, tp, two_counts ? " full layers'" : "");
  const KvShare swa = two_counts ? kv_share(s.n_kv_head_swa, tp, " windowed layers'") : full;
  p.kv_heads_per_rank = full.per_rank;
  p.kv_replicas = full.replicas;
  // The K/V projections' bytes per kind of layer in proportion to their
  // values per token (the windowed layers' heads may be of their own size).
  const double full_values = double((s.n_kv_layers() - s.n_swa_layers) * s.n_kv_head * s.head_dim);
  const double swa_values = two_counts ? double(s.n_swa_layers * s.n_kv_head_swa *
                                                (s.head_dim_swa > 0 ? s.head_dim_swa : s.head_dim))
                                       : 0.0;
  const double kept =
      (full_values * double(full.per_rank) / double(s.n_kv_head) +
       (two_counts ? swa_values * double(swa.per_rank) / double(s.n_kv_head_swa) : 0.0)) /
      std::max(1.0, full_values + swa_values);
  p.weight_bytes = w.whole + w.divided / uint64_t(tp) +
                   (two_counts ? uint64_t(double(w.kv_heads) * kept)
                               : w.kv_heads / uint64_t(s.n_kv_head) * uint64_t(full.per_rank));
  p.rank_shape = s;
  p.rank_shape.n_head = s.n_head / tp;
  p.rank_shape.n_kv_head = p.kv_heads_per_rank;
  p.rank_shape.n_kv_head_swa = two_counts ? swa.per_rank : 0;
  p.rank_shape.n_ff = s.n_ff / tp;
  p.rank_shape.n_ff_all_layers = s.n_ff_all_layers / tp;
  p.rank_shape.n_ff_min = s.n_ff_min / tp;
  // Each rank holds its share of every expert and of the linear-attention
  // heads with their state (model/tensor_split.h).
  p.rank_shape.n_ff_exp = s.n_ff_exp / tp;
  p.rank_shape.n_ff_shexp = s.n_ff_shexp / tp;
  p.rank_shape.linear.n_k_heads = s.linear.n_k_heads / tp;
  p.rank_shape.linear.n_v_heads = s.linear.n_v_heads / tp;
  p.rank_shape.state_bytes_per_sequence = s.state_bytes_per_sequence / uint64_t(tp);
  return p;
}

std::string describe_kv_sharding(int64_t n_kv_head, int tp) {
  const std::string heads =
      std::to_string(n_kv_head) + " KV heads over " + std::to_string(tp) + " ranks: ";
  if (n_kv_head >= tp) return heads + std::to_string(n_kv_head / tp) + " per rank";
  return heads + "each held by " + std::to_string(tp / n_kv_head) +
         " ranks (replicated, as vLLM does)";
}

}  // namespace kvforge
