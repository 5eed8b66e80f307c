#include "app/engine_generation.h"

#include <numeric>

namespace kvforge {

GenerationResult generate_with_engine(TextEngine& engine, std::span<const int32_t> prompt,
                                      const SamplingParams& params, const TextSink& on_text) {
  SamplingParams p = params;
  const int room = engine.engine().max_sequence_tokens() - int(prompt.size());
  if (p.max_tokens && room > 0 && *p.max_tokens > room) p.max_tokens = room;
  const RequestId id = engine.add_tokens(prompt, p);
  GenerationResult result;
  result.prompt_tokens = int(prompt.size());
  result.seed = engine.seed(id);
  while (engine.has_unfinished()) {
    for (TextEvent& ev : engine.step()) {
      if (ev.request != id) continue;
      if (!ev.text.empty() && on_text) on_text(ev.text);
      if (!ev.result) continue;
      const BranchTimings& t = ev.result->timings;
      result.text = std::move(ev.result->text);
      result.tokens = std::move(ev.result->tokens);
      result.finish_reason = finish_reason_name(ev.result->finish);
      result.prefill_seconds = t.ttft_seconds;
      result.first_token_seconds = t.ttft_seconds;
      result.decode_steps = int(t.inter_token_seconds.size());
      result.decode_seconds =
          std::accumulate(t.inter_token_seconds.begin(), t.inter_token_seconds.end(), 0.0);
    }
  }
  return result;
}

}  // namespace kvforge
