// The rules every plan obeys, checked after compiling and, above all, after
// loading a plan file: a plan read from disk is hostile until proven
// otherwise. A plan that passes can be executed without reading or writing
// outside its arena, its buffers, the model's tensors or the KV cache.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "engine/static_pipeline/plan.h"
#include "model/model.h"

namespace kvforge {

class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Checks op codes, weight references and layers, that every buffer an op
// touches exists and has exactly the size the op needs at its row count,
// that buffers lie inside the arena at aligned offsets, the attention thread
// split, and the matmul scratch size. Throws PlanError naming the plan, the
// op or buffer and expected vs found.
void validate_plan(const Plan& plan, const Model& model, int32_t n_threads);

// Also checks the model's per-layer features against the ops: Q/K norms,
// post norms, the gated activation, soft-capping of the logits, each layer's
// RoPE table and kind of attention (full: KvWrite then Attention; sliding
// window: KvStage, WindowAttention, then KvWrite).

// validate_plan on every plan, plus their shapes against the configuration:
// prefill rows = prefill_chunk and KV length = capacity, one generate plan
// per variant with rows = slots and KV length = the variant; and the
// recorded layer_windows against the model's.
void validate_plan_set(const PlanSet& set, const Model& model);

// [n_layer] the model's sliding window of each layer (0 = full attention):
// what PlanSet::layer_windows records.
std::vector<int32_t> layer_windows(const ModelConfig& config);

// The largest KV head record of any format for head_dim: KvStage's records
// are sized for it, so that a plan does not depend on the KV format.
uint64_t max_kv_record_bytes(int head_dim);

}  // namespace kvforge
