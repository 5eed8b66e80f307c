// `kvforge run --static` / `kvforge run --plan FILE`: the run command on the
// static pipeline (cmd_run.cpp hands over here after tokenizing the prompt).
#include <cstdio>

#include "app/cli/static_flags.h"
#include "app/static_generation.h"
#include "core/threadpool.h"
#include "engine/static_pipeline/static_runner.h"

namespace kvforge::cli {
namespace {

void print_static_timing(const StaticGenerationResult& s, const StaticRunner& runner) {
  const GenerationResult& r = s.generation;
  std::fprintf(
      stderr,
      "\n\nprompt    %5d tokens  prefill %9.2f ms  %9.2f tok/s  (time to first token %.2f ms)\n",
      r.prompt_tokens, r.prefill_seconds * 1e3, r.prompt_tokens / r.prefill_seconds,
      r.first_token_seconds * 1e3);
  if (r.decode_steps > 0) {
    const double per = r.decode_seconds / r.decode_steps;
    std::fprintf(stderr, "decode    %5d tokens  %7.2f ms/token  %9.2f tok/s\n", r.decode_steps,
                 per * 1e3, 1.0 / per);
  }
  std::string variants;
  const std::vector<int32_t>& lens = runner.config().generate_variants;
  for (size_t i = 0; i < lens.size(); ++i)
    if (s.steps_per_variant[i] > 0)
      variants += " " + std::to_string(lens[i]) + ":" + std::to_string(s.steps_per_variant[i]);
  std::fprintf(stderr, "variants  steps per KV length%s\n",
               variants.empty() ? " (none)" : variants.c_str());
  std::fprintf(stderr, "generated %5zu tokens  finish: %s  seed: %llu\n", r.tokens.size(),
               r.finish_reason.c_str(), static_cast<unsigned long long>(r.seed));
}

}  // namespace

void run_static(const StaticFlags& flags, const Model& model, const Tokenizer& tokenizer,
                const std::string& prompt_text, const std::vector<int32_t>& tokens,
                const SamplingParams& params, int threads, KvFormat kv, bool quiet) {
  const OverflowPolicy overflow = flags.overflow_policy();
  StaticPlans prepared = prepare_static_plans(flags, model, kv, threads);
  ThreadPool pool(prepared.plans.n_threads);
  StaticRunner runner(model, pool, std::move(prepared.plans));
  if (!quiet)
    std::fprintf(stderr, "static pipeline: %s; plans %s; %d threads; arena %.1f KiB, KV %.1f MiB\n",
                 runner.config().describe().c_str(), prepared.source.c_str(), pool.size(),
                 double(runner.plans().largest_arena_bytes()) / 1024.0,
                 double(runner.cache().bytes()) / (1024.0 * 1024.0));
  std::fputs(prompt_text.c_str(), stdout);
  std::fflush(stdout);
  const StaticGenerationResult r =
      generate_static(runner, tokenizer, tokens, params, overflow, [](std::string_view s) {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
      });
  if (!r.notice.empty()) std::fprintf(stderr, "\nnote: %s", r.notice.c_str());
  if (!quiet)
    print_static_timing(r, runner);
  else
    std::fputc('\n', stdout);
}

}  // namespace kvforge::cli
