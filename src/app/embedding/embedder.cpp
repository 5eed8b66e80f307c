#include "app/embedding/embedder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "core/enum_names.h"
#include "engine/kv/contiguous_kv_cache.h"
#include "model/forward.h"

namespace kvforge {
namespace {

// Tokens per forward call: bounds the activation scratch of a long input or a batch.
constexpr int32_t kChunkTokens = 256;

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

// One forward call's worth of the batch: pieces of several inputs, each
// piece a run of positions of its input's own KV sequence.
struct EmbedStep {
  std::vector<int32_t> tokens, positions, seq_ids;  // [n_tokens]
  std::vector<int32_t> rows;                        // [rows] indices into tokens the pooling reads
  std::vector<int32_t> row_seq;                     // [rows] the input each row belongs to
  void clear() {
    tokens.clear();
    positions.clear();
    seq_ids.clear();
    rows.clear();
    row_seq.clear();
  }
  // Positions [first, first + n) of input `seq`; `piece_rows` index into the piece.
  void add(const std::vector<int32_t>& input, int32_t seq, int32_t first, int32_t n,
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
};

}  // namespace

constexpr EnumName<Pooling> kPoolingNames[] = {
    {Pooling::Mean, "mean"},
    {Pooling::Cls, "cls"},
    {Pooling::Last, "last"},
};

const char* pooling_name(Pooling p) { return name_of(p, kPoolingNames); }

std::optional<Pooling> pooling_from_name(std::string_view name) {
  return value_named(name, kPoolingNames);
}

void normalize_embedding(std::vector<float>& v, int norm) {
  double size = 0;
  if (norm == kEmbdNormNone) {
    return;
  } else if (norm == kEmbdNormMaxAbs) {
    for (float x : v) size = std::max(size, double(std::fabs(x)));
    size /= 32760.0;  // the largest component becomes 32760: int16 range
  } else if (norm == 1) {
    for (float x : v) size += std::fabs(x);
  } else if (norm == kEmbdNormEuclidean) {
    for (float x : v) size += double(x) * x;
    size = std::sqrt(size);
  } else if (norm > 2) {
    for (float x : v) size += std::pow(double(std::fabs(x)), norm);
    size = std::pow(size, 1.0 / norm);
  } else {
    throw std::invalid_argument("embedding normalization " + std::to_string(norm) +
                                " is not one of -1 (none), 0 (max-abs), 1, 2 or p > 2");
  }
  // As llama.cpp's: a zero vector stays zero.
  const float scale = size > 0 ? float(1.0 / size) : 0.0f;
  for (float& x : v) x *= scale;
}

std::vector<float> shorten_embedding(std::vector<float> v, int dimensions, int norm) {
  if (dimensions < 1 || size_t(dimensions) > v.size())
    throw std::invalid_argument("embedding dimensions " + std::to_string(dimensions) +
                                " outside 1.." + std::to_string(v.size()));
  v.resize(size_t(dimensions));
  normalize_embedding(v, norm);
  return v;
}

Pooling model_pooling(const Model& model, Pooling fallback) {
  const std::string arch = model.file().get_string_or("general.architecture", "");
  const uint32_t type = model.file().get_u32_or(arch + ".pooling_type", 0);
  switch (type) {
    case 0:
      return fallback;
    case 1:
    case 2:
    case 3:
      return Pooling(type);
    default:
      throw std::invalid_argument(arch + ".pooling_type " + std::to_string(type) +
                                  " (4 = rank: a reranker) is not supported for embeddings");
  }
}

Embedder::Embedder(const Model& model, ThreadPool& pool, Pooling pooling, int norm)
    : model_(model), pool_(pool), pooling_(pooling), norm_(norm) {
  std::vector<float> probe = {1.0f};
  normalize_embedding(probe, norm);  // refuses an unknown norm here, not per request
}

int Embedder::dimensions() const { return model_.config().n_embd; }

std::vector<float> Embedder::embed(std::span<const int32_t> tokens) const {
  const std::vector<int32_t> one(tokens.begin(), tokens.end());
  return std::move(embed_batch(std::span(&one, 1)).front());
}

void Embedder::check_batch(std::span<const std::vector<int32_t>> inputs) const {
  if (inputs.empty()) throw std::invalid_argument("embeddings: no input");
  for (const std::vector<int32_t>& tokens : inputs)
    if (tokens.empty()) throw std::invalid_argument("embeddings: the input is empty");
  if (model_.tp() > 1)
    throw std::invalid_argument("embeddings are not supported under tensor parallelism yet");
}

std::vector<std::vector<float>> Embedder::embed_batch(
    std::span<const std::vector<int32_t>> inputs) const {
  check_batch(inputs);
  const ModelConfig& c = model_.config();
  const auto n_embd = size_t(c.n_embd);
  const auto n_seqs = int32_t(inputs.size());
  int32_t longest = 0;
  for (const std::vector<int32_t>& t : inputs) longest = std::max(longest, int32_t(t.size()));
  ContiguousKvCache kv(c, longest, KvFormat{}, n_seqs);  // f32 K/V: the model's own precision
  ForwardScratch scratch(model_.rank_config());
  std::vector<std::vector<float>> pooled(inputs.size(), std::vector<float>(n_embd, 0.0f));
  std::vector<int32_t> done(inputs.size(), 0);  // [input] tokens run so far
  EmbedStep step;
  std::vector<float> hidden;  // [rows][n_embd] of the current step
  for (int32_t next = 0; next < n_seqs;) {
    step.clear();
    for (int32_t s = next; s < n_seqs && step.tokens.size() < size_t(kChunkTokens); ++s) {
      const auto total = int32_t(inputs[size_t(s)].size());
      const int32_t n = std::min(kChunkTokens - int32_t(step.tokens.size()), total - done[s]);
      step.add(inputs[size_t(s)], s, done[s], n, pooled_rows(pooling_, done[s], n, total));
      done[s] += n;
    }
    hidden.assign(std::max<size_t>(step.rows.size(), 1) * n_embd, 0.0f);
    StepInputs in;
    in.tokens = step.tokens;
    in.positions = step.positions;
    in.seq_ids = step.seq_ids;
    in.logit_rows = step.rows;
    in.final_hidden = hidden.data();
    forward(model_, in, kv, scratch, pool_, nullptr);
    // Row by row in position order: the same sums as the input alone.
    for (size_t r = 0; r < step.rows.size(); ++r)
      for (size_t j = 0; j < n_embd; ++j)
        pooled[size_t(step.row_seq[r])][j] += hidden[r * n_embd + j];
    while (next < n_seqs && done[next] == int32_t(inputs[size_t(next)].size())) ++next;
  }
  for (size_t s = 0; s < inputs.size(); ++s) {
    if (pooling_ == Pooling::Mean)
      for (float& x : pooled[s]) x /= float(inputs[s].size());
    normalize_embedding(pooled[s], norm_);
  }
  return pooled;
}

}  // namespace kvforge
