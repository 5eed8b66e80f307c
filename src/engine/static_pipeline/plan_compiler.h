// The plan compiler: model shapes + static configuration → fixed-shape plans.
// A plan is the forward pass's own layer walk (model/layer_walk.h, the
// sequence of steps forward() runs) recorded one op per step, with fixed
// shapes and buffers bound by role and placed in one arena; the executor
// runs them through the forward pass's block steps (model/block_steps.h).
// Compilation reads only the model's configuration and weight shapes, never
// weight values, so a plan set is tied to the model by its fingerprint.
#pragma once

#include <cstdint>

#include "engine/static_pipeline/plan.h"
#include "model/model.h"

namespace kvforge {

// Compiles one prefill plan and one generate plan per variant for `n_threads`
// threads. Throws std::invalid_argument for an invalid configuration.
PlanSet compile_plans(const Model& model, const StaticConfig& config, int32_t n_threads);

// One plan: `rows` input rows over `kv_len` KV positions, logits for
// `n_logit_rows` gathered rows.
Plan compile_plan(const Model& model, PlanKind kind, int32_t rows, int32_t kv_len,
                  int32_t n_logit_rows, int32_t n_threads);

// Plans compiled by this process so far (every compile_plan call). A static
// runner compiles nothing after construction: tests read this around decode
// steps to prove that no step re-plans.
uint64_t plans_compiled();

}  // namespace kvforge
