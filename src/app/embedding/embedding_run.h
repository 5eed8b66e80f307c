// One batch of embedding inputs computed a forward call at a time, so that a
// caller can do other work between the calls (the server's engine loop runs
// one call between two engine steps). Each input is a KV sequence of the
// run's own cache (f32 K/V: the model's own precision), nothing of the
// engine's pool; every call runs up to 256 tokens of as many inputs as fit.
#pragma once

#include <cstdint>
#include <vector>

#include "app/embedding/embedder.h"
#include "engine/kv/contiguous_kv_cache.h"
#include "model/forward.h"

namespace kvforge {

// One forward call's worth of a run: pieces of several inputs, each piece a
// run of positions of its input's own KV sequence.
struct EmbedStep {
  std::vector<int32_t> tokens, positions, seq_ids;  // [n_tokens]
  std::vector<int32_t> rows;                        // [rows] indices into tokens the pooling reads
  std::vector<int32_t> row_seq;                     // [rows] the input each row belongs to
  void clear();
  // Positions [first, first + n) of input `seq`; `piece_rows` index into the piece.
  void add(const std::vector<int32_t>& input, int32_t seq, int32_t first, int32_t n,
           const std::vector<int32_t>& piece_rows);
};

class EmbeddingRun {
 public:
  // Tokens per forward call: bounds the activation scratch and the time one
  // call holds the caller's thread.
  static constexpr int32_t kChunkTokens = 256;

  // The embedder must outlive the run. Throws as Embedder::embed_batch (no
  // input, an empty one, a tensor-parallel model).
  EmbeddingRun(const Embedder& embedder, std::vector<std::vector<int32_t>> inputs);

  bool finished() const { return next_ == n_seqs(); }
  // The next forward call. Throws std::out_of_range for a token outside the
  // vocabulary (the run cannot go on then).
  void step();
  // The pooled, normalised embeddings in input order; once finished().
  std::vector<std::vector<float>> results();

 private:
  int32_t n_seqs() const { return int32_t(inputs_.size()); }

  const Embedder& embedder_;
  std::vector<std::vector<int32_t>> inputs_;
  ContiguousKvCache kv_;
  ForwardScratch scratch_;
  std::vector<std::vector<float>> pooled_;  // [input][n_embd] sums of the pooled rows
  std::vector<int32_t> done_;               // [input] tokens run so far
  int32_t next_ = 0;                        // the first input not run to its end
  EmbedStep step_;
  std::vector<float> hidden_;  // [rows][n_embd] of the current call
};

}  // namespace kvforge
