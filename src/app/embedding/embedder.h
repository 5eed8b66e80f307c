// Sentence embeddings from a decoder model: the prompt is run through the
// forward pass on a KV cache of its own (nothing of the engine's pool), the
// final-normed hidden states ([n_tokens][n_embd], what llama.cpp calls
// t_embd) are pooled into one vector, and that vector is L2-normalised, as
// llama-server and llama-embedding (--embd-normalize 2) do by default (or
// scaled as the embedder's norm says).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/threadpool.h"
#include "model/model.h"

namespace kvforge {

// GGUF's `<arch>.pooling_type` values (llama.cpp's enum llama_pooling_type).
enum class Pooling { Mean = 1, Cls = 2, Last = 3 };

const char* pooling_name(Pooling p);
// "mean", "cls", "last"; nullopt for another name.
std::optional<Pooling> pooling_from_name(std::string_view name);

// The pooling `<arch>.pooling_type` declares; `fallback` when the file states
// none (0) or does not have the key. Throws std::invalid_argument for a
// pooling kvforge does not implement (4 = rank, a reranker's).
Pooling model_pooling(const Model& model, Pooling fallback);

// How a pooled vector is scaled, as llama.cpp's --embd-normalize numbers it:
// -1 not at all, 0 its largest |component| to 32760 (int16 range), 1 unit sum
// of |components|, 2 unit Euclidean length (the default, as llama-server's),
// p > 2 unit p-norm. Throws std::invalid_argument for other values.
constexpr int kEmbdNormNone = -1, kEmbdNormMaxAbs = 0, kEmbdNormEuclidean = 2;
void check_embedding_norm(int norm);
void normalize_embedding(std::vector<float>& v, int norm);

// The first `dimensions` components of an embedding, normalised again with
// `norm`: how models trained with Matryoshka representation learning
// (OpenAI's text-embedding-3, Qwen3-Embedding, nomic-embed v1.5) are
// shortened. Other models' shortened vectors are valid but poorer; a GGUF
// does not say which kind it holds. Throws std::invalid_argument outside
// 1..v.size().
std::vector<float> shorten_embedding(std::vector<float> v, int dimensions,
                                     int norm = kEmbdNormEuclidean);

class Embedder {
 public:
  // The model and pool must outlive the embedder; the pool must not be used
  // by another thread while embed() runs (the server runs it on its engine
  // loop, between engine steps).
  Embedder(const Model& model, ThreadPool& pool, Pooling pooling, int norm = kEmbdNormEuclidean);

  const Model& model() const { return model_; }
  ThreadPool& pool() const { return pool_; }
  Pooling pooling() const { return pooling_; }
  int norm() const { return norm_; }
  int dimensions() const;

  // The pooled, normalised embedding ([n_embd]) of `tokens`. Throws
  // std::invalid_argument for an empty input or a tensor-parallel model,
  // std::out_of_range for a token outside the vocabulary.
  std::vector<float> embed(std::span<const int32_t> tokens) const;
  // The embeddings of several inputs computed together: each input is a KV
  // sequence of one cache, and every forward call runs up to 256 tokens of
  // as many inputs as fit. Each result is the same bits as embed() of that
  // input alone (the forward pass does not depend on its batch neighbours or
  // where a prefill is cut). The cache holds inputs.size() x the longest
  // input's positions. Throws as embed() does.
  std::vector<std::vector<float>> embed_batch(std::span<const std::vector<int32_t>> inputs) const;

  // Throws std::invalid_argument for no input, an empty one, or a
  // tensor-parallel model.
  void check_inputs(std::span<const std::vector<int32_t>> inputs) const;

 private:
  const Model& model_;
  ThreadPool& pool_;
  Pooling pooling_;
  int norm_;  // normalize_embedding's
};

}  // namespace kvforge
