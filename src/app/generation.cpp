#include "app/generation.h"

#include <chrono>
#include <numeric>

namespace kvforge {
namespace {

void take_result(BranchResult& branch, GenerationResult& result) {
  const BranchTimings& t = branch.timings;
  result.text = std::move(branch.text);
  result.tokens = std::move(branch.tokens);
  result.finish_reason = finish_reason_name(branch.finish);
  result.prefill_seconds = t.ttft_seconds;
  result.first_token_seconds = t.ttft_seconds;
  result.decode_steps = int(t.inter_token_seconds.size());
  result.decode_seconds =
      std::accumulate(t.inter_token_seconds.begin(), t.inter_token_seconds.end(), 0.0);
}

// The timings of an aborted request, which gets no BranchResult: from the
// submission and the arrival of its first and latest tokens.
struct AbortTimings {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now(), first, last;
  int tokens = 0;

  void token() {
    last = Clock::now();
    if (tokens++ == 0) first = last;
  }
  void fill(GenerationResult& r) const {
    if (tokens == 0) return;
    r.prefill_seconds = r.first_token_seconds = seconds(start, first);
    r.decode_steps = tokens - 1;
    r.decode_seconds = seconds(first, last);
  }
  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
};

}  // namespace

GenerationResult generate(TextEngine& engine, std::span<const int32_t> prompt,
                          const SamplingParams& params, const TextSink& on_text,
                          const StopCheck& should_stop) {
  const Engine& e = engine.engine();
  const int kept = e.prompt_tokens_kept(int(prompt.size()));
  SamplingParams p = params;
  const int room = e.max_sequence_tokens() - kept;
  // A context shift makes room as the reply goes; else the context bounds it.
  if (!e.options().context_shift && p.max_tokens && room > 0 && *p.max_tokens > room)
    p.max_tokens = room;
  const RequestId id = engine.add_tokens(prompt, p);
  GenerationResult result;
  result.prompt_tokens = kept;
  result.prompt_tokens_dropped = int(prompt.size()) - kept;
  result.seed = engine.seed(id);
  // An aborted request reports no result: keep what was streamed until then.
  std::string streamed;
  AbortTimings timings;
  while (engine.has_unfinished()) {
    if (should_stop && should_stop()) {
      engine.abort(id);
      result.text = std::move(streamed);
      result.finish_reason = finish_reason_name(FinishReason::Abort);
      timings.fill(result);
      break;
    }
    for (TextEvent& ev : engine.step()) {
      if (ev.request != id) continue;
      if (!ev.text.empty()) {
        if (should_stop) streamed += ev.text;
        if (on_text) on_text(ev.text);
      }
      if (ev.token) {
        result.tokens.push_back(ev.token->id);
        timings.token();
      }
      if (ev.result) take_result(*ev.result, result);
    }
  }
  result.reached_context = result.finish_reason == "length" && params.max_tokens &&
                           int(result.tokens.size()) < *params.max_tokens;
  return result;
}

}  // namespace kvforge
