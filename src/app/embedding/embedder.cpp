#include "app/embedding/embedder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "app/embedding/embedding_run.h"
#include "core/enum_names.h"

namespace kvforge {

constexpr EnumName<Pooling> kPoolingNames[] = {
    {Pooling::Mean, "mean"},
    {Pooling::Cls, "cls"},
    {Pooling::Last, "last"},
};

const char* pooling_name(Pooling p) { return name_of(p, kPoolingNames); }

std::optional<Pooling> pooling_from_name(std::string_view name) {
  return value_named(name, kPoolingNames);
}

void check_embedding_norm(int norm) {
  if (norm < kEmbdNormNone)
    throw std::invalid_argument("embedding normalization " + std::to_string(norm) +
                                " is not one of -1 (none), 0 (max-abs), 1, 2 or p > 2");
}

void normalize_embedding(std::vector<float>& v, int norm) {
  check_embedding_norm(norm);
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
  } else {  // p > 2
    for (float x : v) size += std::pow(double(std::fabs(x)), norm);
    size = std::pow(size, 1.0 / norm);
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
      throw std::invalid_argument(
          arch + ".pooling_type " + std::to_string(type) +
          (type == 4 ? " (rank: a reranker's scores)" : " (not one of llama.cpp's poolings)") +
          " is not supported for embeddings; pass --pooling mean, cls or last to embed with "
          "another");
  }
}

Embedder::Embedder(const Model& model, ThreadPool& pool, Pooling pooling, int norm)
    : model_(model), pool_(pool), pooling_(pooling), norm_(norm) {
  check_embedding_norm(norm);  // here, not per request
}

int Embedder::dimensions() const { return model_.config().n_embd; }

std::vector<float> Embedder::embed(std::span<const int32_t> tokens) const {
  const std::vector<int32_t> one(tokens.begin(), tokens.end());
  return std::move(embed_batch(std::span(&one, 1)).front());
}

void Embedder::check_inputs(std::span<const std::vector<int32_t>> inputs) const {
  if (inputs.empty()) throw std::invalid_argument("embeddings: no input");
  for (const std::vector<int32_t>& tokens : inputs)
    if (tokens.empty()) throw std::invalid_argument("embeddings: the input is empty");
  if (model_.tp() > 1)
    throw std::invalid_argument("embeddings are not supported under tensor parallelism yet");
}

std::vector<std::vector<float>> Embedder::embed_batch(
    std::span<const std::vector<int32_t>> inputs) const {
  EmbeddingRun run(*this, {inputs.begin(), inputs.end()});
  while (!run.finished()) run.step();
  return run.results();
}

}  // namespace kvforge
