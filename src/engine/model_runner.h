// Turns a step's scheduled chunks into one batched forward pass over the
// paged KV pool: performs the block copies copy-on-write asked for, lays out
// tokens / positions / sequence ids / logit rows (StepInputs) and runs the
// model. What the pass computed is the engine's post-processing to record
// (n_computed, the block manager's prefix cache, the disk tier): the runner
// knows the cache, not who keeps track of it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/threadpool.h"
#include "engine/kv/block_manager.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/scheduler.h"
#include "model/forward.h"
#include "model/model.h"

namespace kvforge {

class ModelRunner {
 public:
  // max_step_tokens: the scheduler's token budget; buffers are sized for it.
  // `comm`: the channel between the ranks the model was loaded for.
  ModelRunner(const Model& model, PagedKvCache& cache, ThreadPool& pool, Communicator& comm,
              int32_t max_step_tokens);

  // Performs `copies` (a shared partial block duplicated before either owner
  // writes into it), then computes the chunks, each starting at its
  // sequence's n_computed. Returns the logits of the chunks that want them,
  // in chunk order: [rows][n_vocab], valid until the next call. argmax_only:
  // they feed only an argmax (StepInputs::argmax_only).
  std::span<const float> run(std::span<const BlockCopy> copies,
                             std::span<const ScheduledChunk> chunks, bool argmax_only = false);

  // Where the forward passes of all run() calls so far spent their time.
  const ForwardTimes& forward_times() const { return scratch_.times(); }

 private:
  const Model& model_;
  PagedKvCache& cache_;
  ThreadPool& pool_;
  Communicator& comm_;
  ForwardScratch scratch_;
  std::vector<int32_t> tokens_;      // [n_tokens]
  std::vector<int32_t> positions_;   // [n_tokens]
  std::vector<int32_t> seq_ids_;     // [n_tokens]
  std::vector<int32_t> logit_rows_;  // [sequences sampling this step]
  std::vector<float> logits_;        // [logit rows][n_vocab]
};

}  // namespace kvforge
