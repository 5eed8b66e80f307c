#include "engine/sequence_runner.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace kvforge {

SequenceRunner::SequenceRunner(const Model& model, ThreadPool& pool, SequenceRunnerOptions options)
    : model_(model),
      pool_(pool),
      comm_(options.comm ? *options.comm : one_process_communicator()),
      max_batch_(std::max(1, options.max_batch)),
      argmax_only_(options.argmax_only),
      cache_(model.rank_config(), options.n_ctx > 0 ? options.n_ctx : model.config().n_ctx_train,
             options.kv_format),
      scratch_(model.rank_config()) {
  check_communicator(model, comm_, "sequence runner");
  max_batch_ = std::min(max_batch_, cache_.capacity());
  scratch_.reserve(max_batch_, pool.size());
  positions_.resize(size_t(max_batch_));
  logit_rows_.resize(size_t(max_batch_));
  logits_.resize(size_t(model.config().n_vocab));
}

std::span<const float> SequenceRunner::prefill(std::span<const int32_t> tokens, bool all_logits) {
  const size_t n_vocab = size_t(model_.config().n_vocab);
  if (tokens.empty()) throw std::invalid_argument("prefill: no tokens");
  if (int64_t(n_past_) + int64_t(tokens.size()) > cache_.capacity())
    throw std::length_error("context overflow: " + std::to_string(n_past_) +
                            " tokens in the cache + " + std::to_string(tokens.size()) +
                            " new > context size " + std::to_string(cache_.capacity()));
  if (all_logits && logits_.size() < tokens.size() * n_vocab)
    logits_.resize(tokens.size() * n_vocab);
  for (size_t done = 0; done < tokens.size();) {
    const size_t n = std::min(tokens.size() - done, size_t(max_batch_));
    for (size_t i = 0; i < n; ++i) positions_[i] = n_past_ + int32_t(i);
    const bool last_chunk = done + n == tokens.size();
    std::span<const int32_t> rows;
    float* out = logits_.data();
    if (all_logits) {
      std::iota(logit_rows_.begin(), logit_rows_.begin() + ptrdiff_t(n), 0);
      rows = std::span<const int32_t>(logit_rows_.data(), n);
      out = logits_.data() + done * n_vocab;
    } else if (last_chunk) {
      logit_rows_[0] = int32_t(n - 1);
      rows = std::span<const int32_t>(logit_rows_.data(), 1);
    }
    const StepInputs in{tokens.subspan(done, n),
                        std::span<const int32_t>(positions_.data(), n),
                        {},
                        rows,
                        argmax_only_};
    forward(model_, in, cache_, scratch_, pool_, comm_, out);
    n_past_ += int32_t(n);
    done += n;
  }
  return std::span<const float>(logits_.data(), all_logits ? tokens.size() * n_vocab : n_vocab);
}

std::span<const float> SequenceRunner::decode(int32_t token) {
  return prefill(std::span<const int32_t>(&token, 1));
}

}  // namespace kvforge
