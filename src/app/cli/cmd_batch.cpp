// kvforge batch: offline generation for every line of a prompt file through
// the batching engine (as vLLM's LLM.generate does), then per-request outputs
// in input order and totals.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>

#include "app/cli/cli_common.h"
#include "app/cli/command_engine.h"
#include "app/cli/commands.h"
#include "app/cli/engine_flags.h"
#include "app/cli/progress_line.h"
#include "app/cli/subcommand.h"
#include "app/percentiles.h"
#include "app/text_engine.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct BatchFlags : ModelFlags {
  std::string prompt_file;
  int n_predict = 64;
  int samples = 1;
  bool no_bos = false;
  EngineFlags engine;
  SamplingFlags sampling;
};

std::vector<std::string> read_prompts(const std::string& path) {
  std::vector<std::string> prompts;
  std::istringstream in(read_text_file(path));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) prompts.push_back(line);
  if (prompts.empty()) throw std::runtime_error(path + ": no prompts (one per non-empty line)");
  return prompts;
}

void print_totals(const std::vector<std::vector<BranchResult>>& results, const EngineStats& st,
                  int32_t peak_blocks, double seconds) {
  int64_t prompt_tokens = 0, generated = 0;
  std::vector<double> ttft, itl;
  for (const auto& branches : results)
    for (size_t b = 0; b < branches.size(); ++b) {
      if (b == 0) prompt_tokens += branches[b].prompt_tokens;
      generated += int64_t(branches[b].tokens.size());
      ttft.push_back(branches[b].timings.ttft_seconds * 1e3);
      for (double s : branches[b].timings.inter_token_seconds) itl.push_back(s * 1e3);
    }
  std::printf(
      "\n%zu requests, %lld prompt tokens, %lld generated tokens in %.2f s: "
      "%.1f output tok/s, %.1f total tok/s\n",
      results.size(), (long long)prompt_tokens, (long long)generated, seconds,
      double(generated) / seconds, double(prompt_tokens + generated) / seconds);
  std::printf("time to first token  p50 %.1f ms  p90 %.1f ms  p99 %.1f ms\n", percentile(ttft, 0.5),
              percentile(ttft, 0.9), percentile(ttft, 0.99));
  std::printf("inter-token latency  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms\n", percentile(itl, 0.5),
              percentile(itl, 0.9), percentile(itl, 0.99));
  std::printf(
      "%lld steps, %lld preemptions, peak KV %d of %d blocks, prefix cache: %lld hits, "
      "%lld misses, %lld tokens reused\n",
      (long long)st.steps, (long long)st.preemptions, peak_blocks, st.kv_blocks_total,
      (long long)st.prefix.hits, (long long)st.prefix.misses, (long long)st.prefix.tokens_reused);
  if (const std::string tiers = describe_kv_tiers(st); !tiers.empty())
    std::printf("%s\n", tiers.c_str());
}

void batch(const BatchFlags& f) {
  SamplingParams params = f.sampling.to_params(f.n_predict);
  const auto [path, model, tokenizer] = load_model(f);
  f.sampling.bind_grammar(params, tokenizer);
  check_context_size(model->config(), f.engine.options.n_ctx, "-c/--ctx-size");
  // Ranks other than 0 follow rank 0's engine inside make_paged_engine and end there.
  const CommandEngine made = make_paged_engine(*model, tokenizer, f.threads, f.engine.to_options());
  TextEngine& engine = *made.engine;
  const std::vector<std::string> prompts = read_prompts(f.prompt_file);
  std::fprintf(stderr, "model %s: %d layers, n_embd %d, %d threads%s; %s\n",
               path.filename().c_str(), model->config().n_layer, model->config().n_embd,
               made.pool->size(), describe_tp(*model).c_str(),
               describe_engine(engine.engine(), f.engine.kv.describe()).c_str());

  const auto t0 = std::chrono::steady_clock::now();
  TextRequestOptions ro;
  ro.n = f.samples;
  if (f.no_bos) ro.add_bos = false;
  std::map<RequestId, size_t> index;
  for (size_t i = 0; i < prompts.size(); ++i) {
    try {
      index[engine.add(prompts[i], params, ro)] = i;
    } catch (const RequestRejected& e) {
      throw std::runtime_error("prompt " + std::to_string(i + 1) + ": " + e.what());
    }
  }
  std::vector<std::vector<BranchResult>> results(prompts.size(),
                                                 std::vector<BranchResult>(size_t(f.samples)));
  int32_t peak_blocks = 0;
  size_t done = 0;
  ProgressLine progress;
  while (engine.has_unfinished()) {
    for (TextEvent& ev : engine.step())
      if (ev.result) {
        results[index.at(ev.request)][size_t(ev.branch)] = std::move(*ev.result);
        ++done;
      }
    // In-step peak: a step's blocks are counted before sliding windows release any.
    peak_blocks = std::max(peak_blocks, engine.engine().stats().kv_blocks_used_peak);
    progress.update("%zu/%zu done", done, prompts.size() * size_t(f.samples));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish();

  for (size_t i = 0; i < prompts.size(); ++i) {
    std::printf("=== request %zu (%d prompt tokens) ===\nprompt: %s\n", i + 1,
                results[i][0].prompt_tokens, prompts[i].c_str());
    for (size_t b = 0; b < results[i].size(); ++b) {
      const BranchResult& r = results[i][b];
      if (f.samples > 1)
        std::printf("output[%zu]: %s\n", b, r.text.c_str());
      else
        std::printf("output: %s\n", r.text.c_str());
      std::printf("  (%zu tokens, finish %s, first token %.1f ms)\n", r.tokens.size(),
                  finish_reason_name(r.finish), r.timings.ttft_seconds * 1e3);
    }
  }
  print_totals(results, engine.engine().stats(), peak_blocks, seconds);
}

void declare_flags(CLI::App& sub, BatchFlags& flags) {
  sub.add_option("-f,--file", flags.prompt_file, "prompts, one per line")->required();
  add_n_predict_flag(sub, flags.n_predict, "tokens to generate per output");
  sub.add_option("--samples", flags.samples, "outputs per prompt (parallel sampling, n)")
      ->capture_default_str();
  flags.add_threads_flag(sub);
  flags.add_tp_flag(sub);
  sub.add_flag("--no-bos", flags.no_bos, "do not prepend BOS even if the model wants it");
  flags.engine.add_to(sub);
  flags.sampling.add_to(sub);
}

}  // namespace

void declare_batch_command(CLI::App& sub) {
  declare_model_command<BatchFlags>(sub, batch, declare_flags);
}

}  // namespace kvforge::cli
