// Single-sequence text generation: prefill the prompt in batched forward
// passes, then sample and decode token by token, streaming complete UTF-8
// text with stop strings held back until they can be ruled out.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "app/tokenizer/tokenizer.h"
#include "engine/sampling/sampling_params.h"
#include "engine/sequence_runner.h"

namespace kvforge {

struct GenerationResult {
  std::string text;             // everything streamed, stop string excluded
  std::vector<int32_t> tokens;  // generated ids (an end-of-generation token excluded)
  int prompt_tokens = 0;
  double prefill_seconds = 0;      // prompt forward passes
  double first_token_seconds = 0;  // time to first token: prefill + first sampling
  double decode_seconds = 0;       // single-token forward passes after the first token
  int decode_steps = 0;
  uint64_t seed = 0;          // the sampler's seed, to replay the run
  std::string finish_reason;  // "stop" (end-of-generation token or stop string) or "length"
};

using TextSink = std::function<void(std::string_view)>;

// Runs from an empty sequence. Throws std::length_error when the prompt does
// not fit the context, std::invalid_argument for invalid sampling parameters.
GenerationResult generate(SequenceRunner& runner, const Tokenizer& tokenizer,
                          std::span<const int32_t> prompt, const SamplingParams& params,
                          const TextSink& on_text);

}  // namespace kvforge
