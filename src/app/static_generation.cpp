#include "app/static_generation.h"

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

}  // namespace

StaticGenerationResult generate_static(StaticRunner& runner, const Tokenizer& tokenizer,
                                       std::span<const int32_t> prompt,
                                       const SamplingParams& params, OverflowPolicy overflow,
                                       const TextSink& on_text, int32_t slot) {
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

  SlotRelease release{runner, slot};
  const auto t0 = std::chrono::steady_clock::now();
  std::span<const float> logits = runner.prefill(slot, kept);
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
    result.decode_seconds += seconds_since(t1);
    ++result.decode_steps;
  }
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
