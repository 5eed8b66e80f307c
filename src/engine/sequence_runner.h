// Runs one sequence through the model with a contiguous KV cache: the prompt
// in batched forward passes (matrix-matrix, up to `max_batch` tokens each),
// then one token at a time. All buffers are sized at construction, so decode
// steps allocate nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/threadpool.h"
#include "engine/kv/contiguous_kv_cache.h"
#include "model/forward.h"
#include "model/model.h"

namespace kvforge {

struct SequenceRunnerOptions {
  int32_t n_ctx = 0;        // KV capacity in tokens; 0 = the model's training context
  int32_t max_batch = 512;  // tokens per prefill forward pass
  KvFormat kv_format = {};  // K and V storage formats (f32 by default)
  // The logits returned feed only an argmax (StepInputs::argmax_only): on
  // several ranks, only each vocabulary slice's maximum is exchanged.
  bool argmax_only = false;
  // The channel between the ranks the model was loaded for (it must outlive
  // the runner); nullptr: one process.
  Communicator* comm = nullptr;
};

class SequenceRunner {
 public:
  SequenceRunner(const Model& model, ThreadPool& pool, SequenceRunnerOptions options = {});

  int32_t n_ctx() const { return cache_.capacity(); }
  int32_t n_past() const { return n_past_; }
  const Model& model() const { return model_; }
  Communicator& communicator() const { return comm_; }

  // Appends `tokens` to the sequence. Returns the logits of the last token
  // ([n_vocab]); with all_logits, logits of every token ([tokens.size()][n_vocab])
  // are returned instead. The span stays valid until the next call.
  // Throws std::length_error when the context would overflow.
  std::span<const float> prefill(std::span<const int32_t> tokens, bool all_logits = false);
  // Appends one token; returns its logits [n_vocab].
  std::span<const float> decode(int32_t token);
  // Forgets the sequence (positions restart at 0); the cache memory is kept.
  void reset() { n_past_ = 0; }

 private:
  const Model& model_;
  ThreadPool& pool_;
  Communicator& comm_;
  int32_t max_batch_;
  bool argmax_only_;
  ContiguousKvCache cache_;
  ForwardScratch scratch_;
  int32_t n_past_ = 0;
  std::vector<int32_t> positions_;   // [max_batch]
  std::vector<int32_t> logit_rows_;  // [max_batch]
  std::vector<float> logits_;        // [max_batch or more][n_vocab]
};

}  // namespace kvforge
