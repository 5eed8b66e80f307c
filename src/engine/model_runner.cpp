#include "engine/model_runner.h"

#include <stdexcept>
#include <string>

namespace kvforge {

ModelRunner::ModelRunner(const Model& model, PagedKvCache& cache, ThreadPool& pool,
                         Communicator& comm, int32_t max_step_tokens)
    : model_(model), cache_(cache), pool_(pool), comm_(comm), scratch_(model.rank_config()) {
  check_communicator(model, comm, "model runner");
  scratch_.reserve(max_step_tokens, pool.size());
  tokens_.reserve(size_t(max_step_tokens));
  positions_.reserve(size_t(max_step_tokens));
  seq_ids_.reserve(size_t(max_step_tokens));
}

std::span<const float> ModelRunner::run(std::span<const BlockCopy> copies,
                                        std::span<const ScheduledChunk> chunks, bool argmax_only) {
  for (const BlockCopy& c : copies) cache_.copy_block(c.src, c.dst);

  tokens_.clear();
  positions_.clear();
  seq_ids_.clear();
  logit_rows_.clear();
  for (const ScheduledChunk& c : chunks) {
    const Sequence& seq = *c.seq;
    if (c.start != seq.n_computed || c.start + c.n > seq.len())
      throw std::logic_error("model runner: chunk [" + std::to_string(c.start) + ", " +
                             std::to_string(c.start + c.n) + ") of sequence " +
                             std::to_string(seq.id) + " with " + std::to_string(seq.n_computed) +
                             " computed of " + std::to_string(seq.len()) + " tokens");
    for (int32_t i = 0; i < c.n; ++i) {
      tokens_.push_back(seq.tokens[size_t(c.start + i)]);
      positions_.push_back(c.start + i);
      seq_ids_.push_back(seq.id);
    }
    if (c.wants_logits) logit_rows_.push_back(int32_t(tokens_.size()) - 1);
  }
  if (tokens_.empty()) return {};
  if (int(tokens_.size()) > scratch_.capacity())
    scratch_.reserve(int(tokens_.size()), pool_.size());
  const size_t n_vocab = size_t(model_.config().n_vocab);
  logits_.resize(logit_rows_.size() * n_vocab);
  const StepInputs in{tokens_, positions_, seq_ids_, logit_rows_, argmax_only};
  forward(model_, in, cache_, scratch_, pool_, comm_, logits_.data());
  return logits_;
}

}  // namespace kvforge
