// kvforge bench-static: what the static pipeline costs and saves.
//   1. plan compile time (the whole set, best of 3);
//   2. decode step time per generate variant at one context length (default
//      200 tokens): the same step through variant 256 ... capacity;
//   3. a long greedy generation (default 1000 tokens): plans compiled for it
//      (one set, before it starts) against what a per-step-reshape runtime
//      would compile (one program per distinct KV length), and the variants used;
//   4. static vs dynamic (SequenceRunner, contiguous cache) decode tok/s on
//      that generation, with a check that the greedy tokens are identical.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/static_flags.h"
#include "app/cli/subcommand.h"
#include "engine/sequence_runner.h"
#include "engine/static_pipeline/plan_compiler.h"
#include "engine/static_pipeline/static_runner.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct BenchStaticFlags : ModelFlags {
  int context = 200;
  int generate = 1000;
  int prompt = 16;
  int reps = 20;
  KvTypeFlags kv;
  StaticFlags shape;
};

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int32_t argmax(std::span<const float> v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

std::vector<int32_t> bench_prompt(int n, int32_t n_vocab) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p[size_t(i)] = int32_t((i * 7919 + 13) % n_vocab);
  return p;
}

void variant_step_times(const BenchStaticFlags& f, const Model& model, StaticRunner& runner) {
  const int32_t ctx = f.context;
  if (ctx < 1 || ctx > runner.config().max_prompt_len || ctx >= runner.capacity())
    throw std::invalid_argument("--context " + std::to_string(ctx) +
                                " must be in [1, max-prompt-len] and below the capacity");
  const std::vector<int32_t> prompt = bench_prompt(ctx, model.config().n_vocab);
  runner.prefill(0, prompt);
  const int32_t token[1] = {3};
  std::printf("\ndecode step at context %d, per generate variant (median of %d):\n", ctx, f.reps);
  std::printf("  %-10s %12s %10s\n", "KV length", "ms/step", "vs smallest");
  double first = 0;
  const std::vector<int32_t>& lens = runner.config().generate_variants;
  for (size_t v = runner.variant_for(ctx + 1); v < lens.size(); ++v) {
    std::vector<double> times;
    for (int r = 0; r < f.reps + 2; ++r) {
      if (runner.state_intact(0, ctx)) {
        runner.truncate(0, ctx);
      } else {  // a hybrid model's recurrent states cannot be cut back: fill the slot again
        runner.release(0);
        runner.prefill(0, prompt);
      }
      const auto t0 = Clock::now();
      runner.decode_with_variant(token, v);
      if (r >= 2) times.push_back(ms_since(t0));  // two warm-up steps
    }
    const double ms = median(times);
    if (first == 0) first = ms;
    std::printf("  %-10d %12.3f %9.2fx\n", lens[v], ms, ms / first);
  }
  runner.release(0);
}

struct GenerationRun {
  std::vector<int32_t> tokens;
  double decode_ms = 0;
  int steps = 0;
};

// Static and dynamic decode in lockstep (one step of each in turn), so that
// both see the same machine load: on a shared machine sequential runs can
// differ by more than the engines do.
std::pair<GenerationRun, GenerationRun> lockstep_generation(StaticRunner& runner, ThreadPool& pool,
                                                            const std::vector<int32_t>& prompt,
                                                            int steps,
                                                            std::set<int32_t>& kv_lengths) {
  SequenceRunner dynamic(
      runner.model(), pool,
      {.n_ctx = runner.capacity(), .max_batch = 512, .kv_format = runner.config().kv_format});
  GenerationRun st, dy;
  st.tokens.push_back(argmax(runner.prefill(0, prompt)));
  dy.tokens.push_back(argmax(dynamic.prefill(prompt)));
  for (int i = 0; i < steps; ++i) {
    kv_lengths.insert(runner.length(0) + 1);
    auto t0 = Clock::now();
    st.tokens.push_back(argmax(runner.decode_one(0, st.tokens.back())));
    st.decode_ms += ms_since(t0);
    t0 = Clock::now();
    dy.tokens.push_back(argmax(dynamic.decode(dy.tokens.back())));
    dy.decode_ms += ms_since(t0);
  }
  st.steps = dy.steps = steps;
  runner.release(0);
  return {st, dy};
}

void bench(const BenchStaticFlags& f) {
  const auto path = resolve_model_path(f.model);
  const auto model = Model::load(path);
  f.loading.lock_memory();
  const StaticConfig config = f.shape.to_config(f.kv.format());
  std::printf("model %s: %s, %d layers, n_embd %d; %d threads\nstatic %s\n",
              path.filename().c_str(), model->config().arch_name.c_str(), model->config().n_layer,
              model->config().n_embd, f.threads, config.describe().c_str());

  std::vector<double> compile_ms;
  PlanSet plans;
  const uint64_t compiled_before = plans_compiled();
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    plans = compile_plans(*model, config, f.threads);
    compile_ms.push_back(ms_since(t0));
  }
  const uint64_t plans_per_set = (plans_compiled() - compiled_before) / 3;
  std::printf("\nplan compile: %llu plans in %.3f ms (best of 3); largest arena %s\n",
              static_cast<unsigned long long>(plans_per_set),
              *std::min_element(compile_ms.begin(), compile_ms.end()),
              human_bytes(double(plans.largest_arena_bytes())).c_str());

  ThreadPool pool(f.threads);
  StaticRunner runner(*model, pool, plans);
  variant_step_times(f, *model, runner);

  const int steps = std::min(f.generate, config.capacity() - f.prompt);
  const std::vector<int32_t> prompt = bench_prompt(f.prompt, model->config().n_vocab);
  std::set<int32_t> kv_lengths;
  const std::vector<uint64_t> variant_steps_before = runner.steps_per_variant();
  const uint64_t before = plans_compiled();
  const auto [st, dy] = lockstep_generation(runner, pool, prompt, steps, kv_lengths);
  const uint64_t during = plans_compiled() - before;
  std::printf("\n%d-token greedy generation after a %d-token prompt:\n", steps, f.prompt);
  std::printf("  static:            %llu plans compiled once before it, %llu during it\n",
              static_cast<unsigned long long>(plans_per_set),
              static_cast<unsigned long long>(during));
  std::printf("  per-step reshape:  %zu programs (one per distinct KV length %d..%d)\n",
              kv_lengths.size(), *kv_lengths.begin(), *kv_lengths.rbegin());
  std::string used;
  for (size_t v = 0; v < config.generate_variants.size(); ++v)
    used += " " + std::to_string(config.generate_variants[v]) + ":" +
            std::to_string(runner.steps_per_variant()[v] - variant_steps_before[v]);
  std::printf("  steps per variant:%s\n", used.c_str());

  const double st_tps = st.steps / (st.decode_ms / 1e3), dy_tps = dy.steps / (dy.decode_ms / 1e3);
  std::printf("\ndecode over the generation (static and dynamic steps interleaved):\n");
  std::printf("  dynamic (contiguous KV)  %8.2f tok/s  %7.3f ms/token\n", dy_tps,
              dy.decode_ms / dy.steps);
  std::printf("  static (plans)           %8.2f tok/s  %7.3f ms/token  %.3fx dynamic\n", st_tps,
              st.decode_ms / st.steps, st_tps / dy_tps);
  std::printf("  greedy tokens identical: %s\n", st.tokens == dy.tokens ? "yes" : "NO");
  if (st.tokens != dy.tokens) throw std::runtime_error("static and dynamic greedy tokens differ");
}

void declare_flags(CLI::App& sub, BenchStaticFlags& flags) {
  flags.add_threads_flag(sub);
  sub.add_option("--context", flags.context, "context length of the per-variant step timing")
      ->capture_default_str();
  sub.add_option("--generate", flags.generate, "tokens of the long generation")
      ->capture_default_str();
  sub.add_option("--prompt-len", flags.prompt, "prompt tokens before the long generation")
      ->capture_default_str();
  sub.add_option("-r,--repetitions,--reps", flags.reps, "timed steps per variant")
      ->capture_default_str();
  flags.kv.add_to(sub);
  flags.shape.add_to(sub, /*with_mode_flags=*/false);
}

}  // namespace

void declare_bench_static_command(CLI::App& sub) {
  declare_model_command<BenchStaticFlags>(sub, bench, declare_flags);
}

}  // namespace kvforge::cli
