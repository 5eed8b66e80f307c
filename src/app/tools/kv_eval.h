// The accuracy of a KV storage format: the same text run twice through the
// model, once with an f32 KV cache (the reference) and once with the
// candidate format, windows of `window` tokens each from an empty cache (as
// in perplexity.h). Compared per predicted position: logits cosine
// similarity, top-1 agreement, KL(reference ‖ candidate) of the next-token
// distributions, and the perplexity of each run; per layer and KV head: the
// cosine similarity of the K and V the two caches hold.
//
// The runs use forward() over a ContiguousKvCache directly (the cache of
// SequenceRunner, prefill in batches of `max_batch`) because the K/V
// comparison reads the caches' records, which SequenceRunner keeps private.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/formats/kv_format.h"
#include "core/threadpool.h"
#include "model/model.h"

namespace kvforge {

struct KvEvalOptions {
  KvFormat candidate = {KvDtype::Int8, KvDtype::Int8};
  int window = 0;  // tokens per window; 0 = min(training context, 512)
  int max_batch = 512;
};

struct KvEvalResult {
  KvFormat candidate;
  int64_t n_tokens = 0;
  int64_t n_predicted = 0;  // positions compared (every window position but its last)
  int n_windows = 0;
  int window = 0;
  // [n_layer][n_kv_head], mean over positions of cos(candidate record, f32 record):
  // what the candidate run actually attends over vs the reference run.
  std::vector<std::vector<double>> k_cosine, v_cosine;
  // Same, but the candidate format applied to the reference run's own K/V:
  // the quantization error alone, without drift from earlier layers.
  std::vector<std::vector<double>> k_cosine_quant_only, v_cosine_quant_only;
  double logits_cosine_mean = 0, logits_cosine_min = 1;
  double top1_agreement = 0;       // fraction of positions with the same argmax
  double kl_mean = 0, kl_max = 0;  // nats
  double ppl_reference = 0, ppl_candidate = 0;
  uint64_t kv_bytes_per_token_reference = 0, kv_bytes_per_token_candidate = 0;
  double seconds = 0;
};

// tokens.size() ≥ 2. Throws std::invalid_argument for a window outside
// [2, training context] or a format that cannot hold the model's heads.
KvEvalResult evaluate_kv_format(const Model& model, ThreadPool& pool,
                                std::span<const int32_t> tokens, const KvEvalOptions& options);

}  // namespace kvforge
