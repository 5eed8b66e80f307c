// kvforge bench-serve: serving throughput and latency of the batching engine
// on synthetic workloads, with ratios against a baseline measured in the
// same run.
//
//  1. Concurrency sweep: C requests (C = 1, 4, 16, 64 by default) of
//     --prompt-len random tokens arrive together and generate --gen-len
//     tokens each (greedy, EOS ignored). Reported per C: aggregate output
//     tok/s, decode tok/s (steps that only decode: tokens / time of those
//     steps) and its ratio to C = 1, TTFT and inter-token latency
//     percentiles, peak KV blocks, KV waste (allocated token slots minus
//     used ones, time-averaged over steps, in %), preemptions. With
//     --rounds N the sweep runs N times, its levels taking turns, and each
//     level's decode ratio to C = 1 is given per round and as the median:
//     the other tenants of a shared machine move a single sweep's ratio by
//     tens of percent (C = 1 is memory-bound and feels them first).
//     After the table, the first round's decode steps per level split by
//     wall time (EngineStats): weight matmuls, output matmul, attention,
//     the rest of the forward pass, and the engine's work outside it.
//  2. Shared prefix: 16 requests whose prompts share a --prefix-len system
//     prompt, with the prefix cache on and off: TTFT and its ratio.
// Each workload's greedy outputs are summed up in a count and a digest, the
// same at every tensor-parallel size: under mpirun rank 0 drives and prints,
// the others follow each engine in lockstep (lead_or_follow_paged).
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "app/bench/bench_kv_tiers.h"
#include "app/bench/token_digest.h"
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

using Clock = std::chrono::steady_clock;

struct BenchServeFlags : ModelFlags {
  std::vector<int> concurrency = {1, 4, 16, 64};
  int prompt_len = 128;
  int gen_len = 128;
  int prefix_requests = 16;
  int prefix_len = 512;
  int suffix_len = 16;
  int prefix_gen_len = 16;
  int rounds = 1;
  bool skip_prefix = false;
  bool skip_sweep = false;
  bool tiers = false;       // the KV-tier workloads (bench_kv_tiers.h)
  bool multi_turn = false;  // of those, the multi-turn chat only (the one run under mpirun)
  std::vector<std::string> tier_kv_types = {"f16", "int8"};
  KvTierBenchOptions tier;
  uint32_t seed = 1;
  EngineFlags engine;
};

struct Workload {
  std::vector<std::vector<int32_t>> prompts;
  int gen_len = 0;
};

// Where decode steps spent their time (EngineStats' phase times), in
// seconds; tensor parallel, also rank 0's collectives (its step messages
// included, time waiting for the other ranks included).
struct DecodeStepTimes {
  double step = 0, forward = 0, weight_matmuls = 0, output_matmul = 0, attention = 0;
  double comm = 0;
  int64_t comm_messages = 0, comm_bytes_sent = 0;
  void add_difference(const EngineStats& after, const EngineStats& before) {
    comm += after.comm_seconds - before.comm_seconds;
    comm_messages += after.comm_messages - before.comm_messages;
    comm_bytes_sent += after.comm_bytes_sent - before.comm_bytes_sent;
    step += after.step_seconds - before.step_seconds;
    forward += after.forward_seconds - before.forward_seconds;
    weight_matmuls += after.weight_matmul_seconds - before.weight_matmul_seconds;
    output_matmul += after.output_matmul_seconds - before.output_matmul_seconds;
    attention += after.attention_seconds - before.attention_seconds;
  }
};

struct RunResult {
  double seconds = 0;
  int64_t generated = 0;
  double decode_seconds = 0;  // steps that only decoded
  int64_t decode_tokens = 0;
  int64_t decode_steps = 0;
  DecodeStepTimes decode_times;  // summed over those steps
  std::vector<double> ttft_ms, itl_ms;
  int32_t peak_blocks = 0, total_blocks = 0;
  double waste_pct = 0;  // time-averaged (allocated - used) / allocated
  int64_t preemptions = 0;
  PrefixCacheStats prefix;
  uint64_t outputs_digest = 0;  // digest_token_lists of every request's tokens
};

std::string describe_outputs(const RunResult& r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lld tokens, digest %016llx", (long long)r.generated,
                (unsigned long long)r.outputs_digest);
  return buf;
}

std::vector<int32_t> random_tokens(std::mt19937& rng, int n, int n_vocab) {
  // Ids from 3 up: 0..2 are <unk>, <s>, </s> in LLaMA vocabularies.
  std::uniform_int_distribution<int32_t> pick(3, n_vocab - 1);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& t : v) t = pick(rng);
  return v;
}

// Ranks other than 0 of a tensor-parallel run follow rank 0's engine and
// return an empty result.
RunResult run_workload(const Model& model, const Tokenizer& tokenizer, ThreadPool& pool,
                       const EngineOptions& options, const Workload& w, const std::string& label) {
  const std::unique_ptr<TextEngine> made = lead_or_follow_paged(model, tokenizer, pool, options);
  if (!made) return {};
  TextEngine& engine = *made;
  SamplingParams params;
  params.temperature = 0;
  params.max_tokens = w.gen_len;
  params.ignore_eos = true;
  const auto t0 = Clock::now();
  std::map<RequestId, size_t> index;  // request -> its prompt's position in w.prompts
  for (size_t i = 0; i < w.prompts.size(); ++i) index[engine.add_tokens(w.prompts[i], params)] = i;
  std::vector<std::vector<int32_t>> outputs(w.prompts.size());
  RunResult r;
  double waste_sum = 0;
  int waste_steps = 0;
  EngineStats before = engine.engine().stats();
  r.total_blocks = before.kv_blocks_total;
  const int64_t expected = int64_t(w.prompts.size()) * w.gen_len;
  ProgressLine progress;
  while (engine.has_unfinished()) {
    const auto s0 = Clock::now();
    for (TextEvent& ev : engine.step()) {
      if (!ev.result) continue;
      outputs[index.at(ev.request)] = ev.result->tokens;
      r.ttft_ms.push_back(ev.result->timings.ttft_seconds * 1e3);
      for (double s : ev.result->timings.inter_token_seconds) r.itl_ms.push_back(s * 1e3);
    }
    const double dt = std::chrono::duration<double>(Clock::now() - s0).count();
    const EngineStats after = engine.engine().stats();
    const int64_t computed = after.tokens_computed - before.tokens_computed;
    const int64_t sampled = after.tokens_generated - before.tokens_generated;
    if (computed > 0 && computed == sampled) {  // every token fed was a decode
      r.decode_seconds += dt;
      r.decode_tokens += sampled;
      ++r.decode_steps;
      r.decode_times.add_difference(after, before);
    }
    r.generated += sampled;
    // Waste of the pool while it holds sequences: slots reserved but empty.
    if (after.kv_slots_allocated > 0) {
      waste_sum += 100.0 * double(after.kv_slots_allocated - after.kv_slots_used) /
                   double(after.kv_slots_allocated);
      ++waste_steps;
    }
    r.peak_blocks = std::max(r.peak_blocks, after.kv_blocks_used);
    before = after;
    progress.update("%-24s %6lld / %lld tokens", label.c_str(), (long long)r.generated,
                    (long long)expected);
  }
  progress.finish();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.waste_pct = waste_steps ? waste_sum / waste_steps : 0;
  r.preemptions = before.preemptions;
  r.prefix = before.prefix;
  r.outputs_digest = digest_token_lists(outputs);  // requests in the order added
  return r;
}

// Tensor parallel: what rank 0's collectives moved and took in those steps.
void print_decode_communication(const std::vector<int>& concurrency,
                                const std::vector<RunResult>& runs) {
  bool any = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    const DecodeStepTimes& t = runs[i].decode_times;
    if (t.comm_messages == 0 || runs[i].decode_tokens == 0) continue;
    if (!any)
      std::printf(
          "\nCommunication in those steps (rank 0; time in collectives includes waiting for "
          "the other ranks):\n\n");
    any = true;
    const double tokens = double(runs[i].decode_tokens);
    std::printf(
        "  C=%-4d %.1f messages and %s sent per decoded token, %.2f ms/step in collectives\n",
        concurrency[i], double(t.comm_messages) / tokens,
        human_bytes(double(t.comm_bytes_sent) / tokens).c_str(),
        1e3 * t.comm / double(runs[i].decode_steps));
  }
}

// The first round's decode steps, per level: mean wall time and its share
// in each phase. What the forward pass leaves of a step is the engine's own
// work (scheduling, block bookkeeping, sampling); what the three phases
// leave of the forward pass is the per-token vector work.
void print_decode_step_times(const std::vector<int>& concurrency,
                             const std::vector<RunResult>& runs) {
  std::printf(
      "\nWhere a decode step's time goes (first round, mean over its decode-only steps):\n\n"
      "| C | step ms | weight matmuls | output matmul | attention | other forward | "
      "outside forward |\n|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = runs[i];
    if (r.decode_steps == 0) continue;
    const DecodeStepTimes& t = r.decode_times;
    const double n = double(r.decode_steps);
    const auto cell = [&](double seconds) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.2f ms (%.0f%%)", 1e3 * seconds / n,
                    t.step > 0 ? 100 * seconds / t.step : 0);
      return std::string(buf);
    };
    std::printf("| %d | %.2f | %s | %s | %s | %s | %s |\n", concurrency[i], 1e3 * t.step / n,
                cell(t.weight_matmuls).c_str(), cell(t.output_matmul).c_str(),
                cell(t.attention).c_str(),
                cell(t.forward - t.weight_matmuls - t.output_matmul - t.attention).c_str(),
                cell(t.step - t.forward).c_str());
  }
  print_decode_communication(concurrency, runs);
}

void concurrency_sweep(const BenchServeFlags& f, const Model& model, const Tokenizer& tok,
                       ThreadPool& pool, const EngineOptions& options) {
  std::printf("\n## Concurrency sweep: prompt %d tokens, %d generated tokens per request\n\n",
              f.prompt_len, f.gen_len);
  std::printf(
      "| C | output tok/s | decode tok/s | decode vs C=1 | TTFT p50/p90/p99 ms | "
      "ITL p50/p90/p99 ms | KV peak blocks | KV waste | preemptions |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  std::mt19937 rng(f.seed);
  std::vector<Workload> workloads;
  for (int c : f.concurrency) {
    Workload w;
    w.gen_len = f.gen_len;
    for (int i = 0; i < c; ++i)
      w.prompts.push_back(random_tokens(rng, f.prompt_len, model.config().n_vocab));
    workloads.push_back(std::move(w));
  }
  // ratios[level][round]: decode tok/s against the same round's first level.
  std::vector<std::vector<double>> ratios(workloads.size());
  std::vector<RunResult> first_round;  // per level, for the step-time table
  for (int round = 0; round < f.rounds; ++round) {
    double base = 0;
    for (size_t level = 0; level < workloads.size(); ++level) {
      const int c = f.concurrency[level];
      const RunResult r = run_workload(
          model, tok, pool, options, workloads[level],
          "C=" + std::to_string(c) + (f.rounds > 1 ? " round " + std::to_string(round + 1) : ""));
      const double decode_tps =
          r.decode_seconds > 0 ? double(r.decode_tokens) / r.decode_seconds : 0;
      if (level == 0) base = decode_tps;
      ratios[level].push_back(base > 0 ? decode_tps / base : 0);
      if (round > 0) continue;  // the table shows the first round
      first_round.push_back(r);
      std::printf(
          "| %d | %.1f | %.1f | %.2fx | %.0f / %.0f / %.0f | %.1f / %.1f / %.1f | %d / %d | "
          "%.1f%% | %lld |\n",
          c, double(r.generated) / r.seconds, decode_tps, ratios[level].back(),
          percentile(r.ttft_ms, 0.5), percentile(r.ttft_ms, 0.9), percentile(r.ttft_ms, 0.99),
          percentile(r.itl_ms, 0.5), percentile(r.itl_ms, 0.9), percentile(r.itl_ms, 0.99),
          r.peak_blocks, r.total_blocks, r.waste_pct, (long long)r.preemptions);
      std::fflush(stdout);
    }
  }
  std::printf("\n(decode vs C=1: ratio to the first level of the sweep)\n\nGreedy outputs:");
  for (size_t i = 0; i < first_round.size(); ++i)
    std::printf("%s C=%d %s", i ? ";" : "", f.concurrency[i],
                describe_outputs(first_round[i]).c_str());
  std::printf("\n");
  print_decode_step_times(f.concurrency, first_round);
  if (f.rounds < 2) return;
  std::printf("\nDecode vs C=%d over %d rounds, levels taking turns:\n\n", f.concurrency[0],
              f.rounds);
  for (size_t level = 1; level < workloads.size(); ++level) {
    std::printf("  C=%-4d", f.concurrency[level]);
    for (double x : ratios[level]) std::printf(" %.2fx", x);
    std::printf("   median %.2fx\n", percentile(ratios[level], 0.5));
  }
}

void shared_prefix(const BenchServeFlags& f, const Model& model, const Tokenizer& tok,
                   ThreadPool& pool, EngineOptions options) {
  std::mt19937 rng(f.seed + 1000);
  Workload w;
  w.gen_len = f.prefix_gen_len;
  const std::vector<int32_t> system = random_tokens(rng, f.prefix_len, model.config().n_vocab);
  for (int i = 0; i < f.prefix_requests; ++i) {
    std::vector<int32_t> p = system;
    const auto tail = random_tokens(rng, f.suffix_len, model.config().n_vocab);
    p.insert(p.end(), tail.begin(), tail.end());
    w.prompts.push_back(std::move(p));
  }
  std::printf(
      "\n## Shared prefix: %d requests, %d-token shared prompt + %d own tokens, "
      "%d generated\n\n",
      f.prefix_requests, f.prefix_len, f.suffix_len, f.prefix_gen_len);
  std::printf(
      "| prefix cache | TTFT mean ms | TTFT p50/p90 ms | wall s | tokens reused | "
      "hits / misses |\n|---|---|---|---|---|---|\n");
  double mean[2] = {0, 0};
  RunResult runs[2];
  for (int on = 1; on >= 0; --on) {
    options.enable_prefix_cache = on;
    const RunResult& r = runs[on] =
        run_workload(model, tok, pool, options, w, on ? "prefix cache on" : "prefix cache off");
    for (double t : r.ttft_ms) mean[on] += t / double(r.ttft_ms.size());
    std::printf("| %s | %.1f | %.1f / %.1f | %.2f | %lld | %lld / %lld |\n", on ? "on" : "off",
                mean[on], percentile(r.ttft_ms, 0.5), percentile(r.ttft_ms, 0.9), r.seconds,
                (long long)r.prefix.tokens_reused, (long long)r.prefix.hits,
                (long long)r.prefix.misses);
    std::fflush(stdout);
  }
  std::printf("\nTTFT ratio off / on: %.2fx\n", mean[1] > 0 ? mean[0] / mean[1] : 0);
  std::printf("Greedy outputs: prefix cache on %s; off %s\n", describe_outputs(runs[1]).c_str(),
              describe_outputs(runs[0]).c_str());
}

void bench_serve(const BenchServeFlags& f) {
  if (f.tiers && world().size() > 1)
    throw std::invalid_argument(
        "bench-serve --tiers does not run under mpirun: the KV disk tier is off when tensor "
        "parallel (each rank would need its own tier files); run --tiers in one process, or "
        "--multi-turn for the multi-turn chat without the disk tier");
  const auto [path, model, tok] = load_model(f);
  ThreadPool pool(f.threads);
  EngineOptions options = f.engine.to_options();
  if (model->tp() > 1) options.comm = &world();
  {
    const Engine probe(*model, pool, options);
    std::printf("# bench-serve: %s (%s, %d layers, n_embd %d), %d threads%s\n%s\n",
                path.filename().c_str(), model->config().arch_name.c_str(), model->config().n_layer,
                model->config().n_embd, pool.size(), describe_tp(*model).c_str(),
                describe_engine(probe, f.engine.kv.describe()).c_str());
  }
  if (!f.skip_sweep) concurrency_sweep(f, *model, tok, pool, options);
  if (!f.skip_prefix) shared_prefix(f, *model, tok, pool, options);
  if (!f.tiers && !f.multi_turn) return;
  KvTierBenchOptions tier = f.tier;
  tier.seed = f.seed;
  tier.parent_dir = f.engine.disk.dir;
  for (const std::string& t : f.tier_kv_types) {
    const std::optional<KvDtype> d = kv_dtype_from_name(t);
    if (!d) throw std::invalid_argument("--tier-kv-types: unknown KV type '" + t + "'");
    tier.formats.push_back({*d, *d});
  }
  options.kv_disk_dir.clear();
  if (f.tiers) bench_tier_ttft(*model, tok, pool, options, tier);
  bench_multi_turn_chat(*model, tok, pool, options, tier);
}

void add_tier_flags(CLI::App& sub, BenchServeFlags& f) {
  sub.add_flag("--multi-turn", f.multi_turn,
               "also run the multi-turn chat workload (part of --tiers): with the disk tier off "
               "and on, or under mpirun, where the disk tier is off, without it");
  sub.add_flag("--tiers", f.tiers,
               "also run the KV-tier workloads: TTFT of a long prefix not cached / in RAM / on "
               "disk after a restart, and multi-turn chat with the disk tier off and on (temporary "
               "tier directories under --kv-disk, else the system's temp dir)");
  sub.add_option("--tier-kv-types", f.tier_kv_types, "KV types of the tier TTFT table")
      ->delimiter(',')
      ->capture_default_str();
  sub.add_option("--tier-prefix-len", f.tier.prefix_len, "prefix tokens of the tier TTFT table")
      ->capture_default_str();
  sub.add_option("--tier-rounds", f.tier.rounds, "prefixes per case (medians)")
      ->capture_default_str();
  sub.add_option("--chat-conversations", f.tier.conversations, "multi-turn chat: conversations")
      ->capture_default_str();
  sub.add_option("--chat-turns", f.tier.turns, "multi-turn chat: turns")->capture_default_str();
  sub.add_option("--chat-context-len", f.tier.context_len,
                 "multi-turn chat: each conversation's own opening tokens")
      ->capture_default_str();
  sub.add_option("--chat-user-len", f.tier.user_len, "multi-turn chat: user tokens per turn")
      ->capture_default_str();
  sub.add_option("--chat-reply-len", f.tier.reply_len, "multi-turn chat: reply tokens per turn")
      ->capture_default_str();
}

void declare_flags(CLI::App& sub, BenchServeFlags& flags) {
  sub.add_option("--concurrency", flags.concurrency, "concurrent requests per level")
      ->delimiter(',')
      ->capture_default_str();
  sub.add_option("--prompt-len", flags.prompt_len, "prompt tokens per request (sweep)")
      ->capture_default_str();
  sub.add_option("--gen-len", flags.gen_len, "generated tokens per request (sweep)")
      ->capture_default_str();
  sub.add_option("--prefix-requests", flags.prefix_requests, "requests sharing the prefix")
      ->capture_default_str();
  sub.add_option("--prefix-len", flags.prefix_len, "shared system-prompt tokens")
      ->capture_default_str();
  sub.add_option("--suffix-len", flags.suffix_len, "own prompt tokens after the prefix")
      ->capture_default_str();
  sub.add_option("--prefix-gen-len", flags.prefix_gen_len,
                 "generated tokens per shared-prefix request")
      ->capture_default_str();
  sub.add_option("--rounds", flags.rounds,
                 "run the concurrency sweep this many times, levels taking turns; report each "
                 "level's decode ratio per round and its median")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  sub.add_flag("--skip-prefix", flags.skip_prefix, "skip the shared-prefix workload");
  sub.add_flag("--skip-sweep", flags.skip_sweep, "skip the concurrency sweep");
  add_tier_flags(sub, flags);
  flags.add_threads_flag(sub);
  flags.add_tp_flag(sub);
  sub.add_option("-s,--seed", flags.seed, "seed of the synthetic prompts")->capture_default_str();
  flags.engine.add_to(sub);
}

}  // namespace

void declare_bench_serve_command(CLI::App& sub) {
  declare_model_command<BenchServeFlags>(sub, bench_serve, declare_flags);
}

}  // namespace kvforge::cli
