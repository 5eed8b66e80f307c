// Turns a step's scheduled chunks into one batched forward pass over the
// paged KV pool: performs the copy-on-write block copies the block manager
// asked for, lays out tokens / positions / sequence ids / logit rows
// (StepInputs), runs the model, then records the newly computed positions
// (BlockManager::mark_computed feeds the prefix cache).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/threadpool.h"
#include "engine/kv/block_manager.h"
#include "engine/kv/disk_prefix_tier.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/scheduler.h"
#include "model/forward.h"
#include "model/model.h"

namespace kvforge {

class ModelRunner {
 public:
  // max_step_tokens: the scheduler's token budget; buffers are sized for it.
  // `comm`: the channel between the ranks the model was loaded for.
  ModelRunner(const Model& model, BlockManager& blocks, PagedKvCache& cache, ThreadPool& pool,
              Communicator& comm, int32_t max_step_tokens);

  // Runs the chunks and advances each sequence's n_computed. Returns the
  // logits of the chunks that want them, in chunk order:
  // [rows][n_vocab], valid until the next call. argmax_only: they feed only
  // an argmax (StepInputs::argmax_only).
  std::span<const float> run(std::span<const ScheduledChunk> chunks, bool argmax_only = false);

  // Writes newly cached full blocks through to this tier after each pass
  // (nullptr: none). It must outlive the runner.
  void set_disk_tier(DiskPrefixTier* tier) { disk_ = tier; }

  // Where the forward passes of all run() calls so far spent their time.
  const ForwardTimes& forward_times() const { return scratch_.times(); }

 private:
  const Model& model_;
  BlockManager& blocks_;
  PagedKvCache& cache_;
  ThreadPool& pool_;
  Communicator& comm_;
  DiskPrefixTier* disk_ = nullptr;
  ForwardScratch scratch_;
  std::vector<int32_t> tokens_;      // [n_tokens]
  std::vector<int32_t> positions_;   // [n_tokens]
  std::vector<int32_t> seq_ids_;     // [n_tokens]
  std::vector<int32_t> logit_rows_;  // [sequences sampling this step]
  std::vector<float> logits_;        // [logit rows][n_vocab]
};

}  // namespace kvforge
