// The rules every plan obeys, checked after compiling and, above all, after
// loading a plan file: a plan read from disk is hostile until proven
// otherwise. A plan that passes can be executed without reading or writing
// outside its arena, its buffers, the model's tensors or the KV cache.
#pragma once

#include <cstdint>
#include <stdexcept>

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

// validate_plan on every plan, plus their shapes against the configuration:
// prefill rows = prefill_chunk and KV length = capacity, one generate plan
// per variant with rows = slots and KV length = the variant.
void validate_plan_set(const PlanSet& set, const Model& model);

}  // namespace kvforge
