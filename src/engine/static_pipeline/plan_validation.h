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

// Checks op codes, layers, norms and row counts; that every operand is one
// of the plan's buffers, used in one role only and exactly of its role's
// size (role_bytes); that buffers lie inside the arena at aligned offsets;
// the attention thread split and the matmul scratch size. Also the model's
// features against the ops: each layer's RoPE table and kind of attention
// (full: Attend; sliding window: WindowAttend), each step of the layer walk
// once per layer. Throws PlanError naming the plan, the op or buffer and
// expected vs found.
void validate_plan(const Plan& plan, const Model& model, int32_t n_threads);

// validate_plan on every plan, plus their shapes against the configuration:
// prefill rows = prefill_chunk and KV length = capacity, one generate plan
// per variant with rows = slots and KV length = the variant; and the
// recorded layer_windows against the model's.
void validate_plan_set(const PlanSet& set, const Model& model);

// [n_layer] the model's sliding window of each layer (0 = full attention):
// what PlanSet::layer_windows records.
std::vector<int32_t> layer_windows(const ModelConfig& config);

// The largest KV head record of any format for head_dim: staged records are
// sized for it, so that a plan does not depend on the KV format.
uint64_t max_kv_record_bytes(int head_dim);

// Bytes of a buffer of `role` in `plan` (plan.h) for this rank's config.
uint64_t role_bytes(const Plan& plan, const ModelConfig& config, BufferRole role);

// Bytes of the attention scratch: [threads][per-thread floats] f32, the
// threads being the plan's attention split's.
uint64_t attention_scratch_bytes(const Plan& plan, const ModelConfig& config);

// Bytes of matmul scratch the op's step needs (model/block_steps.h).
uint64_t op_matmul_scratch_bytes(const Model& model, const PlanOp& op);

}  // namespace kvforge
