#include "engine/kv/tp_memory_plan.h"

#include <stdexcept>

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
  // Vectors (norms, biases of row-parallel outputs) and the embedding table.
  return t.dims.size() < 2 || name == "token_embd.weight";
}

[[noreturn]] void refuse(int tp, const std::string& why) {
  throw std::invalid_argument("tensor parallelism over " + std::to_string(tp) + " ranks: " + why);
}

}  // namespace

WeightSplitBytes weight_split_bytes(const ModelShape& s, GgmlType matrix_type) {
  const TypeTraits tr = type_traits(matrix_type);
  const auto bytes = [&](int64_t elems) {
    return uint64_t(elems / int64_t(tr.block_elems)) * tr.block_bytes;
  };
  const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_kv_head * s.head_dim;
  WeightSplitBytes w;
  w.whole = bytes(s.n_vocab * s.n_embd) + uint64_t(s.n_norm_params()) * 4;
  w.kv_heads = uint64_t(s.n_layer) * bytes(2 * s.n_embd * kv_dim);
  w.divided = uint64_t(s.n_layer) * bytes(2 * s.n_embd * q_dim + 3 * s.n_embd * s.n_ff);
  if (!s.tied_output) w.divided += bytes(s.n_vocab * s.n_embd);
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
  if (s.n_ff % tp != 0) refuse(tp, "n_ff " + std::to_string(s.n_ff) + " does not divide evenly");
  TpRankPlan p;
  p.tp = tp;
  if (s.n_kv_head >= tp) {
    if (s.n_kv_head % tp != 0)
      refuse(tp, "the " + std::to_string(s.n_kv_head) + " KV heads do not divide evenly");
    p.kv_heads_per_rank = s.n_kv_head / tp;
  } else {
    if (tp % s.n_kv_head != 0)
      refuse(tp, "more ranks than the " + std::to_string(s.n_kv_head) +
                     " KV heads, and not a multiple of them (each KV head is replicated on "
                     "the same number of ranks)");
    p.kv_heads_per_rank = 1;
    p.kv_replicas = tp / s.n_kv_head;
  }
  p.weight_bytes = w.whole + w.divided / uint64_t(tp) +
                   w.kv_heads / uint64_t(s.n_kv_head) * uint64_t(p.kv_heads_per_rank);
  p.rank_shape = s;
  p.rank_shape.n_head = s.n_head / tp;
  p.rank_shape.n_kv_head = p.kv_heads_per_rank;
  p.rank_shape.n_ff = s.n_ff / tp;
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
