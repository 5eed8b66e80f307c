// Perplexity of a model on a token stream: the stream is cut into
// consecutive windows of `window` tokens (the last one may be shorter); each
// window is evaluated from an empty cache, and every token of a window except
// its first is predicted from the ones before it.
//   ppl = exp(sum of -log p(token | window prefix) / number of predicted tokens)
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "engine/sequence_runner.h"

namespace kvforge {

struct PerplexityResult {
  double nll_sum = 0;  // natural log
  int64_t n_predicted = 0;
  int n_windows = 0;
  double seconds = 0;
  double mean_nll() const { return n_predicted ? nll_sum / double(n_predicted) : 0; }
  double perplexity() const;
};

using PerplexityProgress = std::function<void(int window, int n_windows, double running_ppl)>;

// `window` must be ≥ 2 and ≤ runner.n_ctx().
PerplexityResult compute_perplexity(SequenceRunner& runner, std::span<const int32_t> tokens,
                                    int window, const PerplexityProgress& progress = {});

}  // namespace kvforge
