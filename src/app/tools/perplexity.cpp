#include "app/tools/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace kvforge {

double PerplexityResult::perplexity() const { return std::exp(mean_nll()); }

namespace {

// -log softmax(logits)[target], in double.
double negative_log_prob(std::span<const float> logits, int32_t target) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - max_logit);
  return std::log(sum) - (double(logits[size_t(target)]) - max_logit);
}

}  // namespace

PerplexityResult compute_perplexity(SequenceRunner& runner, std::span<const int32_t> tokens,
                                    int window, const PerplexityProgress& progress) {
  if (window < 2 || window > runner.n_ctx())
    throw std::invalid_argument("perplexity window " + std::to_string(window) + " must be in [2, " +
                                std::to_string(runner.n_ctx()) + "]");
  if (tokens.size() < 2) throw std::invalid_argument("perplexity needs at least 2 tokens");
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n_vocab = size_t(runner.model().config().n_vocab);
  const int n_windows = int((tokens.size() + size_t(window) - 1) / size_t(window));
  PerplexityResult r;
  for (size_t start = 0; start + 1 < tokens.size(); start += size_t(window)) {
    const auto chunk = tokens.subspan(start, std::min(size_t(window), tokens.size() - start));
    runner.reset();
    const auto logits = runner.prefill(chunk, /*all_logits=*/true);
    for (size_t i = 0; i + 1 < chunk.size(); ++i)
      r.nll_sum += negative_log_prob(logits.subspan(i * n_vocab, n_vocab), chunk[i + 1]);
    r.n_predicted += int64_t(chunk.size()) - 1;
    ++r.n_windows;
    if (progress) progress(r.n_windows, n_windows, r.perplexity());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace kvforge
