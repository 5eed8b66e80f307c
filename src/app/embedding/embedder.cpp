#include "app/embedding/embedder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "engine/kv/contiguous_kv_cache.h"
#include "model/forward.h"

namespace kvforge {
namespace {

// Tokens per forward call: bounds the activation scratch of a long input.
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

void l2_normalize(std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += double(x) * x;
  const double norm = std::sqrt(sum);
  // llama.cpp's common_embd_normalize: a zero vector stays zero.
  const float scale = norm > 0 ? float(1.0 / norm) : 0.0f;
  for (float& x : v) x *= scale;
}

}  // namespace

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean:
      return "mean";
    case Pooling::Cls:
      return "cls";
    case Pooling::Last:
      return "last";
  }
  return "?";
}

std::optional<Pooling> pooling_from_name(std::string_view name) {
  for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Last})
    if (name == pooling_name(p)) return p;
  return std::nullopt;
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

Embedder::Embedder(const Model& model, ThreadPool& pool, Pooling pooling)
    : model_(model), pool_(pool), pooling_(pooling) {}

int Embedder::dimensions() const { return model_.config().n_embd; }

std::vector<float> Embedder::embed(std::span<const int32_t> tokens) const {
  if (tokens.empty()) throw std::invalid_argument("embeddings: the input is empty");
  if (model_.tp() > 1)
    throw std::invalid_argument("embeddings are not supported under tensor parallelism yet");
  const ModelConfig& c = model_.config();
  const auto total = int32_t(tokens.size());
  ContiguousKvCache kv(c, total, KvFormat{});  // f32 K/V: the model's own precision
  ForwardScratch scratch(model_.rank_config());
  std::vector<float> hidden;  // [rows][n_embd] of the current chunk
  std::vector<float> pooled(size_t(c.n_embd), 0.0f);
  std::vector<int32_t> positions;
  for (int32_t first = 0; first < total; first += kChunkTokens) {
    const int32_t n = std::min(kChunkTokens, total - first);
    positions.resize(size_t(n));
    std::iota(positions.begin(), positions.end(), first);
    const std::vector<int32_t> rows = pooled_rows(pooling_, first, n, total);
    hidden.assign(std::max<size_t>(rows.size(), 1) * size_t(c.n_embd), 0.0f);
    StepInputs in;
    in.tokens = tokens.subspan(size_t(first), size_t(n));
    in.positions = positions;
    in.logit_rows = rows;
    in.final_hidden = hidden.data();
    forward(model_, in, kv, scratch, pool_, nullptr);
    for (size_t r = 0; r < rows.size(); ++r)
      for (size_t j = 0; j < size_t(c.n_embd); ++j) pooled[j] += hidden[r * size_t(c.n_embd) + j];
  }
  if (pooling_ == Pooling::Mean)
    for (float& x : pooled) x /= float(total);
  l2_normalize(pooled);
  return pooled;
}

}  // namespace kvforge
