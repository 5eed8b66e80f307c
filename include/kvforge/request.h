// What a request to the Engine (kvforge/engine.h) is and what it gives
// back: ids, finish reasons, rejections, log-probabilities and the per-step
// events of each branch.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

namespace kvforge {

using RequestId = int64_t;

enum class FinishReason {
  Stop,    // an end-of-generation token (not emitted), or a stop string (app layer)
  Length,  // max_tokens reached, or the sequence filled its context
  Abort,   // abort() / stop_branch()
};
// "stop", "length", "abort" (OpenAI's finish_reason spelling).
const char* finish_reason_name(FinishReason reason);

// A request the engine can never serve: empty prompt, a token id outside the
// vocabulary, invalid sampling parameters, or prompt + max_tokens beyond the
// context or the KV pool. The message names the limit and the numbers.
class RequestRejected : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct TokenLogprob {
  int token;
  float logprob;
};

struct LogprobOptions {
  bool enabled = false;  // report the sampled token's log-probability
  int top = 0;           // and the `top` most likely tokens (needs enabled)
};

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0;  // raw model log-probability; 0 unless LogprobOptions::enabled
  std::vector<TokenLogprob> top_logprobs;
};

// What one step did to one branch of one request.
struct StepEvent {
  RequestId request = 0;
  int branch = 0;                       // 0..n-1
  std::optional<GeneratedToken> token;  // absent when the step only ended the branch (EOS)
  std::optional<FinishReason> finish;   // set on the branch's last event
  // Prompt tokens of the request whose K/V came from a cache (RAM prefix
  // cache, static slot or disk tier) instead of being computed (paged: whole
  // blocks, never the prompt's last token).
  int32_t cached_tokens = 0;
};

}  // namespace kvforge
