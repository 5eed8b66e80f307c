// What one rank of a tensor-parallel run holds (model/tensor_split.h):
// Q, attention output, the FFN and the output projection split tp ways; the
// embedding and the norm vectors whole on every rank; K and V projections and
// the KV cache by KV head. When tp exceeds the KV heads, each rank holds the
// one KV head its query heads read (replicated tp / n_kv_head times, as vLLM
// does), so weights and KV per rank stop shrinking at tp = n_kv_head.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/gguf/gguf_file.h"
#include "engine/kv/kv_memory_plan.h"

namespace kvforge {

// Weight bytes by how tensor parallelism divides them.
struct WeightSplitBytes {
  uint64_t whole = 0;     // on every rank: token_embd, norm vectors
  uint64_t divided = 0;   // tp ways: Q, attention output, gate/up/down, output
  uint64_t kv_heads = 0;  // by KV head: the K and V projections (and their biases)
  uint64_t total() const { return whole + divided + kv_heads; }
};

// From a preset shape with matrices of `matrix_type`, or from a file's tensors by name.
WeightSplitBytes weight_split_bytes(const ModelShape& shape, GgmlType matrix_type);
WeightSplitBytes weight_split_bytes(const gguf::GgufFile& file);

struct TpRankPlan {
  int tp = 1;
  int64_t kv_heads_per_rank = 0;
  int64_t kv_replicas = 1;    // ranks holding each KV head (> 1 when tp > n_kv_head)
  uint64_t weight_bytes = 0;  // per rank
  ModelShape rank_shape;      // the shape whose KV one rank stores (its KV heads)
};

// One rank's share at `tp` ranks. Throws std::invalid_argument naming what
// tp does not divide (query heads, KV heads or their multiple, n_ff).
TpRankPlan plan_tp_rank(const ModelShape& shape, const WeightSplitBytes& weights, int tp);

// "4 KV heads over 8 ranks: each held by 2 ranks (replicated, as vLLM)" or
// "8 KV heads over 4 ranks: 2 per rank".
std::string describe_kv_sharding(int64_t n_kv_head, int tp);

}  // namespace kvforge
