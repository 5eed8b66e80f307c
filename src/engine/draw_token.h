// One token drawn by a branch's sampler, with its log-probabilities when the
// request asked for them: the sampling step the paged engine and the static
// batch engine share.
#pragma once

#include <span>
#include <vector>

#include "kvforge/engine.h"

namespace kvforge {

// top_scratch: reused between calls so a step does not allocate for it.
inline GeneratedToken draw_token(Sampler& sampler, std::span<const float> logits,
                                 const LogprobOptions& logprobs,
                                 std::vector<TokenLogprob>& top_scratch) {
  GeneratedToken t;
  if (logprobs.enabled) {
    top_scratch.resize(size_t(logprobs.top));
    const SampleResult s = sampler.sample_with_logprobs(logits, top_scratch);
    t.id = s.token;
    t.logprob = s.logprob;
    t.top_logprobs = top_scratch;
  } else {
    t.id = sampler.sample(logits);
  }
  return t;
}

}  // namespace kvforge
