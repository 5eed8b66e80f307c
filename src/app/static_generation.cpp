#include "app/static_generation.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "app/sampling/stop_strings.h"
#include "app/tokenizer/streaming_detokenizer.h"
#include "engine/sampling/sampler.h"

namespace kvforge {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Frees the slot however generation ends (exceptions included).
struct SlotRelease {
  StaticRunner& runner;
  int32_t slot;
  ~SlotRelease() { runner.release(slot); }
};

// Empties the session unless disarmed: after an exception the slot's content is unknown.
struct SessionGuard {
  StaticRunner& runner;
  StaticSlotSession& session;
  bool armed = true;
  ~SessionGuard() {
    if (!armed) return;
    runner.release(session.slot);
    session.tokens.clear();
  }
};

// Brings the slot to `prompt` and returns the last prompt token's logits;
// `reused` receives the positions kept from before.
std::span<const float> fill_slot(StaticRunner& runner, StaticSlotSession& session,
                                 std::span<const int32_t> prompt, int& reused) {
  size_t common = 0;
  const size_t limit = std::min(session.tokens.size(), prompt.size() - 1);  // >= 1 to compute
  while (common < limit && session.tokens[common] == prompt[common]) ++common;
  // New tokens go through the generate plan one at a time: beyond a prefill
  // chunk of them, recomputing the whole prompt chunk by chunk is cheaper.
  if (prompt.size() - common > size_t(runner.config().prefill_chunk)) common = 0;
  runner.truncate(session.slot, int32_t(std::min(common, size_t(runner.length(session.slot)))));
  session.tokens.resize(size_t(runner.length(session.slot)));
  reused = int(session.tokens.size());
  std::span<const float> logits;
  if (session.tokens.empty()) {
    logits = runner.prefill(session.slot, prompt);
    session.tokens.assign(prompt.begin(), prompt.end());
    return logits;
  }
  for (size_t i = session.tokens.size(); i < prompt.size(); ++i) {
    logits = runner.decode_one(session.slot, prompt[i]);
    session.tokens.push_back(prompt[i]);
  }
  return logits;
}

}  // namespace

StaticGenerationResult generate_static(StaticRunner& runner, const Tokenizer& tokenizer,
                                       std::span<const int32_t> prompt,
                                       const SamplingParams& params, OverflowPolicy overflow,
                                       const TextSink& on_text, int32_t slot) {
  StaticSlotSession session{slot, {}};
  SlotRelease release{runner, slot};
  return generate_static_in_session(runner, tokenizer, session, prompt, params, overflow, on_text);
}

StaticGenerationResult generate_static_in_session(StaticRunner& runner, const Tokenizer& tokenizer,
                                                  StaticSlotSession& session,
                                                  std::span<const int32_t> prompt,
                                                  const SamplingParams& params,
                                                  OverflowPolicy overflow,
                                                  const TextSink& on_text) {
  if (prompt.empty()) throw std::invalid_argument("generate: empty prompt");
  const std::span<const int32_t> kept = fit_prompt(prompt, runner.config(), overflow);
  StaticGenerationResult out;
  GenerationResult& result = out.generation;
  out.prompt_tokens_dropped = int(prompt.size() - kept.size());
  result.prompt_tokens = int(kept.size());
  Sampler sampler(params, runner.model().config().n_vocab);
  result.seed = sampler.seed();
  sampler.accept_prompt(std::vector<int>(kept.begin(), kept.end()));
  StreamingDetokenizer detok(
      tokenizer,
      DecodeOptions{.skip_bos = true, .render_special = false, .strip_space_prefix = false});
  StopStringMatcher stops(params.stop);
  const auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    result.text += piece;
    if (on_text) on_text(piece);
  };

  SessionGuard guard{runner, session};
  const int32_t slot = session.slot;
  const auto t0 = std::chrono::steady_clock::now();
  std::span<const float> logits = fill_slot(runner, session, kept, out.prompt_tokens_reused);
  result.prefill_seconds = seconds_since(t0);
  const int max_new = params.max_tokens.value_or(runner.capacity() - int(kept.size()));
  result.finish_reason = "length";
  for (;;) {
    const int32_t token = sampler.sample(logits);
    if (result.tokens.empty()) result.first_token_seconds = seconds_since(t0);
    if (tokenizer.is_eog(token) && !params.ignore_eos) {
      result.finish_reason = "stop";
      break;
    }
    sampler.accept(token);
    result.tokens.push_back(token);
    emit(stops.feed(detok.push(token)));
    if (stops.stopped()) {
      result.finish_reason = "stop";
      break;
    }
    if (int(result.tokens.size()) >= max_new) break;
    if (runner.length(slot) >= runner.capacity()) {
      out.reached_capacity = true;
      break;
    }
    const auto t1 = std::chrono::steady_clock::now();
    logits = runner.decode_one(slot, token);
    session.tokens.push_back(token);
    result.decode_seconds += seconds_since(t1);
    ++result.decode_steps;
  }
  guard.armed = false;
  if (!stops.stopped()) emit(stops.feed(detok.flush()));
  emit(stops.finish());
  out.steps_per_variant = runner.steps_per_variant();
  if (out.prompt_tokens_dropped > 0)
    out.notice = "prompt truncated on the left: " + std::to_string(out.prompt_tokens_dropped) +
                 " of " + std::to_string(prompt.size()) +
                 " tokens dropped to fit --max-prompt-len " +
                 std::to_string(runner.config().max_prompt_len) + ". ";
  if (out.reached_capacity)
    out.notice += "generation stopped at the static KV capacity of " +
                  std::to_string(runner.capacity()) + " tokens (max_prompt_len " +
                  std::to_string(runner.config().max_prompt_len) + " + min_response_len " +
                  std::to_string(runner.config().min_response_len) + ").";
  return out;
}

}  // namespace kvforge
