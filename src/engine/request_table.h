// The requests an engine is serving, and the rules both KV modes of the
// Engine (paged blocks, static slots) apply to them alike: what a request may
// ask for, the seed each branch samples with, each branch's sampler, and
// what one sample does to a branch (keeps a token; ends it "stop" at an
// end-of-generation token, not emitted, unless ignore_eos; ends it "length"
// at max_tokens or at the longest sequence the engine holds). Where a
// branch's K/V lives and when it runs are the KV manager's and the
// scheduler's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/sampling/sampler.h"
#include "kvforge/engine.h"

namespace kvforge {

struct RequestState {
  std::vector<int32_t> prompt;  // the tokens computed (the static pipeline may keep only the last)
  SamplingParams params;        // seed fixed by RequestTable::add
  LogprobOptions logprobs;
  int n = 1;     // branches
  int open = 0;  // branches not finished
};

// How far one branch may grow.
struct BranchLimits {
  int32_t max_tokens = 0;  // generated tokens
  int32_t max_len = 0;     // prompt + generated tokens
};

class RequestTable {
 public:
  RequestTable(int32_t n_vocab, std::vector<int32_t> eos_token_ids);

  // Throws RequestRejected for what no engine serves: invalid sampling
  // parameters, n outside [1, max_n] (`n_range` is how the message states
  // the range), top logprobs outside [0, n_vocab] or without logprobs, an
  // empty prompt, a token outside the vocabulary.
  void check(std::span<const int32_t> prompt, const SamplingParams& params, int n,
             LogprobOptions logprobs, int max_n, const std::string& n_range) const;
  // Throws RequestRejected when a prompt of `prompt_len` tokens leaves no
  // room in sequences of `max_len` tokens, or prompt + max_tokens exceeds
  // it; `limit` names what sets max_len ("the context of 256 tokens").
  // With `shifts` (a context shift makes room as the reply goes) only the
  // prompt must fit.
  static void check_length(int64_t prompt_len, const SamplingParams& params, int64_t max_len,
                           const std::string& limit, bool shifts = false);

  // Adds a checked request of n branches over `prompt` (the tokens the
  // engine computes); without a seed it gets a random one.
  RequestId add(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                LogprobOptions logprobs);
  const RequestState& at(RequestId id) const { return requests_.at(id); }
  bool contains(RequestId id) const { return requests_.count(id) > 0; }

  // Branch `branch`'s sampler: the request's seed + branch, penalties primed
  // with the prompt.
  std::unique_ptr<Sampler> make_sampler(RequestId id, int branch) const;
  // max_tokens, or what the prompt leaves of max_len.
  BranchLimits limits(RequestId id, int32_t max_len) const;

  // Draws a branch's next token from `logits`, the branch having `generated`
  // tokens and `len` in all (prompt + generated) before it. The event carries
  // the token the sampler accepted (the caller appends it to the branch) and
  // the finish, if this ends the branch.
  StepEvent sample(RequestId id, int branch, Sampler& sampler, std::span<const float> logits,
                   int32_t generated, int32_t len, BranchLimits limits);

  // `count` branches of the request ended (finished, stopped or aborted);
  // the request is forgotten with its last one.
  void end_branches(RequestId id, int count);
  // Forgets the request now, open branches or not.
  void erase(RequestId id) { requests_.erase(id); }

  int64_t tokens_generated() const { return tokens_generated_; }

 private:
  bool is_eos(int32_t token) const;

  int32_t n_vocab_;
  std::vector<int32_t> eos_token_ids_;
  std::unordered_map<RequestId, RequestState> requests_;  // unfinished ones
  RequestId next_id_ = 1;
  int64_t tokens_generated_ = 0;
  std::vector<TokenLogprob> top_;  // draw_token's scratch
};

}  // namespace kvforge
