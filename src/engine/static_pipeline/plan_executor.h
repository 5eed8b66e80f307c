// Runs a plan: each op is a call into the forward pass's own steps
// (model/block_steps.h: embedding, norms and residuals, attention input and
// output, the FFN, the logits with their soft-cap and tensor-parallel
// gather), except the static pipeline's own: the masks and attention over
// its cache (attend_one_head with the mask, attend_queries over a sliding
// window), so static and dynamic results are the same bits.
//
// Nothing is allocated per run: activations live in the caller's arena at
// the plan's offsets (but the mixture-of-experts scratch, the executor's own,
// reserved once), and the matmul scratch is reserved by the caller to the
// plan's size. Tensor
// parallel (model.tp() > 1): a plan compiled for this rank's share computes
// its heads and FFN rows; attention output, FFN down and the logits are
// gathered from every rank as the dynamic forward pass gathers them (the
// exchange buffers grow on the first run, then stay).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/kernels/matmul.h"
#include "core/threadpool.h"
#include "engine/static_pipeline/plan.h"
#include "engine/static_pipeline/static_kv_cache.h"
#include "engine/static_pipeline/static_linear_attention.h"
#include "model/forward_steps.h"
#include "model/model.h"
#include "model/moe_ffn.h"

namespace kvforge {

// The explicit per-step inputs of a plan. Padding rows (valid = 0) still flow
// through the fixed-shape matmuls but are never written to the cache and
// never attend: give them any in-vocabulary token (0) and position 0. With
// sliding-window layers, each slot's valid rows must be consecutive rows at
// consecutive positions (a prefill chunk; one row per slot in decode).
struct PlanInputs {
  std::span<const int32_t> tokens;      // [rows]
  std::span<const int32_t> positions;   // [rows] < kv_len for valid rows
  std::span<const int32_t> slots;       // [rows] KV slot of each row
  std::span<const uint8_t> valid;       // [rows] 1 = a real token
  std::span<const int32_t> logit_rows;  // [n_logit_rows] rows whose logits are wanted
};

class PlanExecutor {
 public:
  // `plan` must have passed validate_plan for this model and n_threads and
  // must outlive the executor, as must `comm`, the channel between the
  // ranks the model was loaded for.
  PlanExecutor(const Model& model, Communicator& comm, const Plan& plan, int32_t n_threads);

  const Plan& plan() const { return plan_; }

  // Tokens the last run's mixture-of-experts layers routed: its valid rows
  // (padding rows pick no experts); 0 for dense models.
  int64_t last_moe_tokens() const { return moe_tokens_; }

  // Runs the plan. `arena`: ≥ plan.arena_bytes, 64-byte aligned; `scratch`
  // reserved to ≥ plan.matmul_scratch_bytes; `pool` of n_threads threads.
  // Reads and writes `cache` (K/V and slot masks). Returns the logits
  // [n_logit_rows][n_vocab], inside the arena: valid until the next run.
  // Throws std::invalid_argument for inputs of the wrong shape or out of range.
  std::span<const float> run(const PlanInputs& in, StaticKvCache& cache, uint8_t* arena,
                             MatmulScratch& scratch, ThreadPool& pool) const;

 private:
  void check_inputs(const PlanInputs& in, const StaticKvCache& cache, uint8_t* arena,
                    const MatmulScratch& scratch, const ThreadPool& pool) const;
  void check_runs(const PlanInputs& in, const StaticKvCache& cache) const;

  const Model& model_;
  Communicator& comm_;
  const Plan& plan_;
  int32_t n_threads_;
  mutable TpExchange tp_;  // run() is const: the buffers are scratch, not state
  // The mixture-of-experts FFN's routing and grouped rows, reserved for the
  // plan's rows at construction (its shapes follow the routing, so they are
  // not arena buffers); empty for dense models.
  mutable MoeScratch moe_;
  mutable int64_t moe_tokens_ = 0;
  // The linear-attention layers' gathered rows and scratch (hybrid models),
  // also reserved for the plan's rows at construction.
  mutable std::optional<StaticLinearAttention> linear_;
};

}  // namespace kvforge
