#include "app/generation.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "app/sampling/stop_strings.h"
#include "app/tokenizer/streaming_detokenizer.h"
#include "engine/sampling/sampler.h"

namespace kvforge {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

GenerationResult generate(SequenceRunner& runner, const Tokenizer& tokenizer,
                          std::span<const int32_t> prompt, const SamplingParams& params,
                          const TextSink& on_text) {
  if (prompt.empty()) throw std::invalid_argument("generate: empty prompt");
  if (int64_t(prompt.size()) >= runner.n_ctx())
    throw std::length_error("prompt of " + std::to_string(prompt.size()) +
                            " tokens leaves no room in a context of " +
                            std::to_string(runner.n_ctx()) + " tokens");
  GenerationResult result;
  result.prompt_tokens = int(prompt.size());
  Sampler sampler(params, runner.model().config().n_vocab);
  result.seed = sampler.seed();
  sampler.accept_prompt(std::vector<int>(prompt.begin(), prompt.end()));
  // The continuation follows the prompt, so its leading space is real text.
  StreamingDetokenizer detok(
      tokenizer,
      DecodeOptions{.skip_bos = true, .render_special = false, .strip_space_prefix = false});
  StopStringMatcher stops(params.stop);
  const auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    result.text += piece;
    if (on_text) on_text(piece);
  };

  runner.reset();
  const auto t0 = std::chrono::steady_clock::now();
  std::span<const float> logits = runner.prefill(prompt);
  result.prefill_seconds = seconds_since(t0);
  const int max_new = params.max_tokens.value_or(runner.n_ctx() - int(prompt.size()));
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
    if (int(result.tokens.size()) >= max_new || runner.n_past() >= runner.n_ctx()) break;
    const auto t1 = std::chrono::steady_clock::now();
    logits = runner.decode(token);
    result.decode_seconds += seconds_since(t1);
    ++result.decode_steps;
  }
  if (!stops.stopped()) emit(stops.feed(detok.flush()));
  emit(stops.finish());
  return result;
}

}  // namespace kvforge
