// Text in, text out, over the Engine (paged blocks or the static pipeline's
// batch slots, possibly leading tensor-parallel ranks): tokenizes prompts, streams
// UTF-8-safe text deltas per request branch (StreamingDetokenizer), applies
// stop strings (the branch is stopped in the engine as soon as one matches,
// finish "stop") and times every branch (time to first token, inter-token
// latencies). Used by `kvforge run` and `kvforge chat` (app/generation.h),
// `kvforge batch`, `kvforge bench-serve` and the HTTP server.
//
// Thread-agnostic and not thread-safe, like Engine: one thread (the engine
// loop) calls add/step/abort.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "app/stop_strings.h"
#include "app/tokenizer/streaming_detokenizer.h"
#include "app/tokenizer/tokenizer.h"
#include "kvforge/engine.h"

namespace kvforge {

struct TextRequestOptions {
  int n = 1;  // parallel samples (branches)
  LogprobOptions logprobs;
  std::optional<bool> add_bos;  // unset = the model's convention
  bool parse_special = true;    // "<|eot_id|>" in the prompt is that token
  bool render_special = false;  // control tokens in the reply as their text (gpt-oss's markup)
};

struct BranchTimings {
  double ttft_seconds = 0;                  // add() to this branch's first token
  std::vector<double> inter_token_seconds;  // between consecutive tokens of the branch
  double total_seconds = 0;                 // add() to the finish
};

// A finished branch.
struct BranchResult {
  std::string text;             // stop string excluded
  std::vector<int32_t> tokens;  // generated ids (EOS excluded)
  int prompt_tokens = 0;
  int cached_tokens = 0;  // of prompt_tokens, served from a cache (StepEvent::cached_tokens)
  FinishReason finish = FinishReason::Stop;
  BranchTimings timings;
};

struct TextEvent {
  RequestId request = 0;
  int branch = 0;
  std::string text;                     // newly complete text, possibly empty
  std::optional<GeneratedToken> token;  // the token this step produced, if any
  std::optional<BranchResult> result;   // set on the branch's last event
  std::optional<size_t> stop_index;     // last event: the stop string that ended the text
  int cached_tokens = 0;  // the prompt tokens served from a cache (BranchResult::cached_tokens)
};

class TextEngine {
 public:
  // On the paged Engine; EngineOptions::eos_token_ids is filled from the
  // tokenizer when empty.
  TextEngine(const Model& model, Tokenizer tokenizer, ThreadPool& pool, EngineOptions options);
  // On an engine built elsewhere (static slots, a leading engine), with the
  // tokenizer's eog_ids() as its end-of-generation tokens.
  TextEngine(Tokenizer tokenizer, std::unique_ptr<Engine> engine);

  // Throws RequestRejected (engine limits, invalid sampling) or TokenizerError
  // (invalid UTF-8) with the reason; nothing is queued then.
  RequestId add(std::string_view prompt, const SamplingParams& params,
                const TextRequestOptions& options = {});
  RequestId add_tokens(std::span<const int32_t> prompt, const SamplingParams& params,
                       const TextRequestOptions& options = {});
  std::vector<TextEvent> step();
  bool abort(RequestId id);
  bool has_unfinished() const { return engine_->has_unfinished(); }

  Engine& engine() { return *engine_; }
  const Engine& engine() const { return *engine_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  // The seed a request's branch 0 samples with (branch b: seed + b).
  uint64_t seed(RequestId id) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Branch {
    Branch(const Tokenizer& t, const std::vector<std::string>& stops, bool render_special);
    StreamingDetokenizer detok;
    StopStringMatcher stops;
    BranchResult result;
    std::optional<Clock::time_point> last_token;
    bool done = false;
  };
  struct Request {
    Clock::time_point added;
    uint64_t seed = 0;
    std::vector<Branch> branches;
    int open = 0;
  };

  void on_event(const StepEvent& ev, Clock::time_point now, std::vector<TextEvent>& out);
  void finish(Request& req, Branch& b, TextEvent& ev, FinishReason reason, Clock::time_point now);

  Tokenizer tokenizer_;
  std::unique_ptr<Engine> engine_;
  std::unordered_map<RequestId, Request> requests_;
};

}  // namespace kvforge
