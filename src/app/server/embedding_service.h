// What the embedding routes do between HTTP and the model: tokenize each
// input, check it against the context, and run the Embedder on the engine
// loop's thread between engine steps, batched with every other request's
// inputs (embedding_batcher.h), so embeddings use the engine's thread pool
// without disturbing the sequences it generates: each batch has a KV cache of
// its own, freed when it ends, and never takes a block of the engine's pool.
#pragma once

#include <functional>
#include <vector>

#include "app/embedding/embedder.h"
#include "app/server/completion_service.h"
#include "app/server/embedding_batcher.h"
#include "app/server/embeddings_api.h"

namespace kvforge::server {

struct EmbeddingResult {
  std::vector<std::vector<float>> vectors;  // [inputs][dimensions]
  int prompt_tokens = 0;                    // over every input
};

class EmbeddingService {
 public:
  // `max_tokens`: the longest input in tokens (the context).
  EmbeddingService(const Embedder& embedder, CompletionService& completions, int max_tokens);

  int dimensions() const { return embedder_.dimensions(); }
  Pooling pooling() const { return embedder_.pooling(); }
  const RequestLimits& limits() const { return completions_.limits(); }

  // Throws ApiError: 400 for an input that is empty, outside the vocabulary
  // or (without r.truncate) longer than the context; 499 when `client_gone`
  // says so while waiting; 503 when the server stops meanwhile.
  EmbeddingResult embed(const EmbeddingsRequest& r, const std::function<bool()>& client_gone);

 private:
  std::vector<int32_t> tokens_of(const EmbeddingInput& input, bool truncate) const;

  const Embedder& embedder_;
  CompletionService& completions_;
  int max_tokens_;
  EmbeddingBatcher batcher_;
};

}  // namespace kvforge::server
