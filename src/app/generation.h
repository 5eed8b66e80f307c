// One prompt through a TextEngine, the paged batching engine or the static
// pipeline alike, with its result and timings: what `kvforge run` prints and
// `kvforge chat` runs each turn.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "app/text_engine.h"
#include "kvforge/sampling_params.h"

namespace kvforge {

struct GenerationResult {
  std::string text;                // everything streamed, stop string excluded
  std::vector<int32_t> tokens;     // generated ids (an end-of-generation token excluded)
  int prompt_tokens = 0;           // computed: the prompt after any truncation
  int prompt_tokens_dropped = 0;   // cut from the left (static pipeline, --overflow truncate-left)
  bool reached_context = false;    // finished "length" short of a max_tokens that was set: the
                                   // sequence filled its context (static: the slot capacity)
  double prefill_seconds = 0;      // the prompt: time to first token, as the engine times it
  double first_token_seconds = 0;  // time to first token
  double decode_seconds = 0;       // from the first token to the last
  int decode_steps = 0;
  uint64_t seed = 0;          // the sampler's seed, to replay the run
  std::string finish_reason;  // "stop" (end-of-generation token or stop string) or "length"
};

using TextSink = std::function<void(std::string_view)>;
// Asked between engine steps; true aborts the request (chat's Ctrl-C).
using StopCheck = std::function<bool()>;

// Runs one request to completion on an idle engine, streaming text to
// on_text. A max_tokens that would overflow the context is cut to fit
// (finish "length" when the context is full); a prompt that leaves no room,
// or one the engine cannot take, throws RequestRejected. When should_stop
// returns true the request is aborted: finish "abort", with the text and
// tokens streamed until then.
GenerationResult generate(TextEngine& engine, std::span<const int32_t> prompt,
                          const SamplingParams& params, const TextSink& on_text,
                          const StopCheck& should_stop = {});

}  // namespace kvforge
