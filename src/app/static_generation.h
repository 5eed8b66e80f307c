// Single-sequence text generation on the static (NPU-style) pipeline: the
// counterpart of generate() (app/generation.h) for a StaticRunner. The prompt
// must fit max_prompt_len (or is cut from the left under
// OverflowPolicy::TruncateLeft); generation ends at the static cache's
// capacity with finish reason "length", or earlier at an end-of-generation
// token, a stop string or max_tokens. With greedy sampling the tokens equal
// generate()'s on a context of the same capacity.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "app/generation.h"
#include "app/tokenizer/tokenizer.h"
#include "engine/sampling/sampling_params.h"
#include "engine/static_pipeline/static_runner.h"

namespace kvforge {

struct StaticGenerationResult {
  GenerationResult generation;
  int prompt_tokens_dropped = 0;  // cut by truncate-left
  int prompt_tokens_reused = 0;   // K/V kept in the slot from an earlier call (sessions)
  bool reached_capacity = false;  // stopped because the static KV cache is full
  std::string notice;             // a sentence for the user when either happened, else empty
  std::vector<uint64_t> steps_per_variant;  // generate steps run per variant
};

// Runs in slot `slot` (which must be empty) and frees it afterwards. Throws
// std::length_error for a prompt over max_prompt_len under
// OverflowPolicy::Error, std::invalid_argument for invalid sampling parameters.
StaticGenerationResult generate_static(StaticRunner& runner, const Tokenizer& tokenizer,
                                       std::span<const int32_t> prompt,
                                       const SamplingParams& params, OverflowPolicy overflow,
                                       const TextSink& on_text, int32_t slot = 0);

// A conversation kept in one static slot across calls (`kvforge chat
// --static`): `tokens` are the positions whose K/V the slot holds.
struct StaticSlotSession {
  int32_t slot = 0;
  std::vector<int32_t> tokens;
};

// generate_static() that keeps the slot filled afterwards and starts from
// what it already holds: the slot is cut back to the longest common prefix of
// `prompt` and session.tokens, and only the rest of the prompt is computed.
// Up to prefill_chunk new tokens run one generate step each (the prefill plan
// starts at position 0); with more, or nothing to reuse, the whole prompt
// goes through the prefill plan chunk by chunk. On an exception the slot is
// freed and the session emptied.
StaticGenerationResult generate_static_in_session(StaticRunner& runner, const Tokenizer& tokenizer,
                                                  StaticSlotSession& session,
                                                  std::span<const int32_t> prompt,
                                                  const SamplingParams& params,
                                                  OverflowPolicy overflow, const TextSink& on_text);

}  // namespace kvforge
