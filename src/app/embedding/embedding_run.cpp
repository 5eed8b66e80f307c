#include "app/embedding/embedding_run.h"

#include <algorithm>
#include <numeric>

namespace kvforge {
namespace {

// The rows of a chunk [first, first + n) whose hidden states the pooling reads.
std::vector<int32_t> pooled_rows(Pooling p, int32_t first, int32_t n, int32_t total) {
  std::vector<int32_t> rows;
  if (p == Pooling::Mean) {
    rows.resize(size_t(n));
    std::iota(rows.begin(), rows.end(), 0);
  } else if (p == Pooling::Cls && first == 0) {
    rows.push_back(0);
  } else if (p == Pooling::Last && first + n == total) {
    rows.push_back(n - 1);
  }
  return rows;
}

// The longest input's length: the positions each sequence of the cache holds.
int32_t longest_input(const Embedder& embedder, const std::vector<std::vector<int32_t>>& inputs) {
  embedder.check_inputs(inputs);
  size_t longest = 0;
  for (const std::vector<int32_t>& t : inputs) longest = std::max(longest, t.size());
  return int32_t(longest);
}

}  // namespace

void EmbedStep::clear() {
  tokens.clear();
  positions.clear();
  seq_ids.clear();
  rows.clear();
  row_seq.clear();
}

void EmbedStep::add(const std::vector<int32_t>& input, int32_t seq, int32_t first, int32_t n,
                    const std::vector<int32_t>& piece_rows) {
  const auto base = int32_t(tokens.size());
  for (int32_t i = 0; i < n; ++i) {
    tokens.push_back(input[size_t(first + i)]);
    positions.push_back(first + i);
    seq_ids.push_back(seq);
  }
  for (int32_t r : piece_rows) {
    rows.push_back(base + r);
    row_seq.push_back(seq);
  }
}

EmbeddingRun::EmbeddingRun(const Embedder& embedder, std::vector<std::vector<int32_t>> inputs)
    : embedder_(embedder),
      inputs_(std::move(inputs)),
      kv_(embedder.model().config(), longest_input(embedder, inputs_), KvFormat{},
          int32_t(inputs_.size())),
      scratch_(embedder.model().rank_config()),
      pooled_(inputs_.size(), std::vector<float>(size_t(embedder.dimensions()), 0.0f)),
      done_(inputs_.size(), 0) {}

void EmbeddingRun::step() {
  if (finished()) return;
  const auto n_embd = size_t(embedder_.dimensions());
  step_.clear();
  for (int32_t s = next_; s < n_seqs() && step_.tokens.size() < size_t(kChunkTokens); ++s) {
    const auto total = int32_t(inputs_[size_t(s)].size());
    const int32_t n = std::min(kChunkTokens - int32_t(step_.tokens.size()), total - done_[s]);
    step_.add(inputs_[size_t(s)], s, done_[s], n,
              pooled_rows(embedder_.pooling(), done_[s], n, total));
    done_[s] += n;
  }
  hidden_.assign(std::max<size_t>(step_.rows.size(), 1) * n_embd, 0.0f);
  StepInputs in;
  in.tokens = step_.tokens;
  in.positions = step_.positions;
  in.seq_ids = step_.seq_ids;
  in.logit_rows = step_.rows;
  in.final_hidden = hidden_.data();
  forward(embedder_.model(), in, kv_, scratch_, embedder_.pool(), nullptr);
  // Row by row in position order: the same sums as the input alone.
  for (size_t r = 0; r < step_.rows.size(); ++r)
    for (size_t j = 0; j < n_embd; ++j)
      pooled_[size_t(step_.row_seq[r])][j] += hidden_[r * n_embd + j];
  while (next_ < n_seqs() && done_[next_] == int32_t(inputs_[size_t(next_)].size())) ++next_;
}

std::vector<std::vector<float>> EmbeddingRun::results() {
  for (size_t s = 0; s < inputs_.size(); ++s) {
    if (embedder_.pooling() == Pooling::Mean)
      for (float& x : pooled_[s]) x /= float(inputs_[s].size());
    normalize_embedding(pooled_[s], embedder_.norm());
  }
  return std::move(pooled_);
}

}  // namespace kvforge
