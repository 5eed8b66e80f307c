// Per-request sampling settings, as the CLI and the OpenAI-compatible server
// receive them. Plain data: validate() rejects absurd values when a request
// arrives, so a bad request fails with a message instead of misbehaving later.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvforge {

class GrammarConstraint;  // engine/sampling/grammar/grammar_constraint.h

struct SamplingParams {
  // --- read by Sampler ---------------------------------------------------
  float temperature = 1.0f;  // logits are divided by it; 0 = greedy (argmax)
  int top_k = 0;             // keep the k highest logits; 0 = off
  float top_p = 1.0f;        // keep the smallest set with cumulative probability >= top_p; 1 = off
  float min_p = 0.0f;        // drop tokens with p < min_p * p(most likely token); 0 = off

  // CTRL / llama.cpp style, on every distinct token in the penalty window
  // (prompt and generated): a positive logit is divided by it, a negative one
  // multiplied, so the token always becomes less likely. 1 = off.
  float repetition_penalty = 1.0f;
  // OpenAI style: logit -= presence_penalty * (count > 0) + frequency_penalty * count,
  // where count = occurrences of the token among *generated* tokens in the window.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // The window all three penalties look at: the last n tokens of the context.
  // -1 = the whole context (exact OpenAI semantics for presence/frequency); 0 = no penalties.
  int penalty_last_n = 64;

  // A grammar (GBNF or a JSON schema compiled to one) every generated token
  // must keep the output a prefix of; end-of-generation only where the output
  // is complete. Shared, read-only: compiled once per text and vocabulary.
  std::shared_ptr<const GrammarConstraint> grammar;

  // Unset = a fresh seed from std::random_device; Sampler::seed() reports the one used,
  // so any run can be replayed.
  std::optional<uint64_t> seed;

  // --- read by the engine, not the sampler --------------------------------
  std::optional<int> max_tokens;  // unset = until EOS or the context is full
  std::vector<std::string> stop;  // output ends before the first occurrence of any of these
  bool ignore_eos = false;        // keep going after EOS (benchmarks)
  // Context shift for this request (engine_shift.cpp): unset = the engine's
  // EngineOptions::context_shift; n_keep unset = EngineOptions::n_keep,
  // -1 = the whole prompt.
  std::optional<bool> context_shift;
  std::optional<int32_t> n_keep;

  // nullopt when usable; otherwise a message naming the field, the value and
  // the allowed range ("sampling: top_p must be in (0, 1], got 1.5").
  std::optional<std::string> validate() const;
};

// Limits enforced by validate(); generous, they only catch nonsense.
constexpr float kMaxTemperature = 100.0f;
constexpr float kMaxRepetitionPenalty = 10.0f;
constexpr float kMaxPresenceFrequencyPenalty = 2.0f;  // OpenAI's documented range is [-2, 2]
constexpr size_t kMaxStopStrings = 32;
constexpr size_t kMaxStopStringBytes = 256;

}  // namespace kvforge
