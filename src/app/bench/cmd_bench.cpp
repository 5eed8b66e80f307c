// kvforge bench: prompt processing (pp) and token generation (tg) speed, in
// the style of common CPU LLM benchmarks, measured against this machine's
// limits in the same run:
//   ppN  = one prefill of N tokens from an empty cache (compute-bound): tok/s
//          and GFLOP/s (2 FLOPs per weight per token, plus attention);
//   tgN  = N single-token decodes from an empty cache (bandwidth-bound):
//          tok/s and % of the roofline = measured read bandwidth / bytes read
//          per token (every weight matrix once, of a mixture of experts the
//          router, the k experts a token runs and any shared expert, the
//          embedding row, and the KV records attention reads), the
//          bandwidth probed again right before
//          each repetition.
// Each test runs once to warm up, then -r times; figures are mean ± stddev
// over repetitions. --ctx-sweep measures decode speed with 0..N tokens
// already in the cache (JSON, for tools/plot_decode_vs_ctx.py).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "app/bench/bench_cost.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/progress_line.h"
#include "app/cli/subcommand.h"
#include "core/cpu_features.h"
#include "core/formats/row_codec.h"
#include "core/memory_bandwidth.h"
#include "engine/sequence_runner.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct BenchFlags : ModelFlags {
  BenchFlags() { threads = 2; }
  int n_prompt = 512;
  int n_gen = 128;
  int repetitions = 5;
  int batch = 512;
  bool json = false;
  int ctx_sweep = 0;       // largest context of the sweep; 0 = no sweep
  int ctx_step = 128;      // sweep spacing
  int sweep_decodes = 32;  // decodes timed per sweep point
  bool greedy = false;     // logits for greedy sampling only (SequenceRunnerOptions::argmax_only)
  KvTypeFlags kv;
};

struct Stats {
  double mean = 0, stddev = 0;
};

Stats stats_of(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / double(v.size() - 1));
  }
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Token ids drawn uniformly (deterministic): the speed does not depend on them.
std::vector<int32_t> bench_tokens(int n, int32_t n_vocab) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(0, n_vocab - 1);
  std::vector<int32_t> t(size_t(std::max(n, 1)));
  for (int32_t& id : t) id = pick(rng);
  return t;
}

// Tensor parallel: this rank's collectives over a test's timed runs.
struct CommUse {
  int64_t tokens = 0, steps = 0;
  CommStats comm;
  double seconds = 0;  // the timed runs' wall time
};

// A timed run: starts when every rank is ready (the ranks' bandwidth probes
// end at different times), and adds its tokens, steps, time and
// collectives (the start's sync excluded) to `use`.
template <class Run>
double timed(Communicator& comm, CommUse& use, int64_t tokens, int64_t steps, Run run) {
  uint64_t ready = 0;
  if (comm.size() > 1) comm.broadcast(&ready, sizeof ready, 0);
  const CommStats before = comm.stats();
  const auto t0 = std::chrono::steady_clock::now();
  run();
  const double s = seconds_since(t0);
  const CommStats after = comm.stats();
  use.tokens += tokens;
  use.steps += steps;
  use.seconds += s;
  use.comm.messages += after.messages - before.messages;
  use.comm.bytes_sent += after.bytes_sent - before.bytes_sent;
  use.comm.bytes_received += after.bytes_received - before.bytes_received;
  use.comm.seconds += after.seconds - before.seconds;
  return s;
}

double time_prefill(SequenceRunner& runner, const std::vector<int32_t>& tokens, int n, int batch,
                    CommUse& use) {
  runner.reset();
  return timed(runner.communicator(), use, n, (n + batch - 1) / batch,
               [&] { runner.prefill(std::span<const int32_t>(tokens.data(), size_t(n))); });
}

// n decodes after `n_past` cached tokens (filled, untimed, by a prefill).
double time_decodes(SequenceRunner& runner, const std::vector<int32_t>& tokens, int n_past, int n,
                    CommUse& use) {
  runner.reset();
  if (n_past > 0) runner.prefill(std::span<const int32_t>(tokens.data(), size_t(n_past)));
  return timed(runner.communicator(), use, n, n, [&] {
    for (int i = 0; i < n; ++i) runner.decode(tokens[size_t(n_past + i)]);
  });
}

struct TestResult {
  std::string name;
  int n_tokens = 0;
  std::vector<double> tok_per_s;  // one per repetition
  double bytes_per_token = 0;     // tg: mean bytes read per token
  double flops = 0;               // pp: FLOPs of one run
  std::vector<double> bandwidth;  // tg: bytes/s probed just before each repetition
  CommUse comm;                   // tensor parallel: rank 0's collectives
};

struct SweepPoint {
  int n_past = 0;
  Stats tok_per_s;
  double roofline_tok_per_s = 0;
};

void show_progress(ProgressLine& line, const char* what, int done, int total) {
  line.update("bench: %s %d/%d", what, done, total);
  if (done == total) line.finish();
}

TestResult run_pp(const BenchFlags& f, SequenceRunner& runner, const CostModel& cost,
                  const std::vector<int32_t>& tokens) {
  TestResult r{"pp" + std::to_string(f.n_prompt), f.n_prompt, {}, 0,
               cost.prefill_flops(f.n_prompt),    {},         {}};
  ProgressLine line;
  show_progress(line, r.name.c_str(), 0, f.repetitions);
  CommUse warm_up;
  time_prefill(runner, tokens, f.n_prompt, f.batch, warm_up);
  for (int i = 0; i < f.repetitions; ++i) {
    r.tok_per_s.push_back(f.n_prompt / time_prefill(runner, tokens, f.n_prompt, f.batch, r.comm));
    show_progress(line, r.name.c_str(), i + 1, f.repetitions);
  }
  return r;
}

// Each repetition is preceded by two probe passes (the faster one counts):
// its roofline is the bandwidth of the moment, not of the start of the run.
TestResult run_tg(const BenchFlags& f, SequenceRunner& runner, const CostModel& cost,
                  const std::vector<int32_t>& tokens, ReadBandwidthProbe& probe) {
  TestResult r{"tg" + std::to_string(f.n_gen), f.n_gen, {}, 0, 0, {}, {}};
  for (int p = 0; p < f.n_gen; ++p) r.bytes_per_token += cost.decode_bytes(p) / f.n_gen;
  ProgressLine line;
  show_progress(line, r.name.c_str(), 0, f.repetitions);
  CommUse warm_up;
  time_decodes(runner, tokens, 0, std::min(f.n_gen, 16), warm_up);
  for (int i = 0; i < f.repetitions; ++i) {
    r.bandwidth.push_back(std::max(probe.pass(), probe.pass()));
    r.tok_per_s.push_back(f.n_gen / time_decodes(runner, tokens, 0, f.n_gen, r.comm));
    show_progress(line, r.name.c_str(), i + 1, f.repetitions);
  }
  return r;
}

// Decodes from an empty cache up to the last sweep point + sweep_decodes,
// timing the sweep_decodes steps that start at each point: the same steps a
// fresh sequence with that many cached tokens would run, without refilling
// the cache by prefill for every point.
std::vector<SweepPoint> run_sweep(const BenchFlags& f, SequenceRunner& runner,
                                  const CostModel& cost, const std::vector<int32_t>& tokens,
                                  double bandwidth) {
  const int n = f.sweep_decodes;
  const int n_points = f.ctx_sweep / f.ctx_step + 1;
  std::vector<std::vector<double>> runs(static_cast<size_t>(n_points));
  ProgressLine line;
  for (int rep = 0; rep < f.repetitions; ++rep) {
    runner.reset();
    for (int i = 0; i < n_points; ++i) {
      const int ctx = i * f.ctx_step;
      while (runner.n_past() < ctx) runner.decode(tokens[size_t(runner.n_past())]);
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < n; ++k) runner.decode(tokens[size_t(runner.n_past())]);
      runs[size_t(i)].push_back(n / seconds_since(t0));
      // Later points restart from ctx + step; the extra decodes past it are untimed.
      if (ctx + n > (i + 1) * f.ctx_step) runner.reset();
    }
    show_progress(line, "ctx sweep", rep + 1, f.repetitions);
  }
  std::vector<SweepPoint> points;
  for (int i = 0; i < n_points; ++i) {
    SweepPoint p;
    p.n_past = i * f.ctx_step;
    double bytes = 0;
    for (int k = 0; k < n; ++k) bytes += cost.decode_bytes(p.n_past + k) / n;
    p.roofline_tok_per_s = bandwidth / bytes;
    p.tok_per_s = stats_of(runs[size_t(i)]);
    points.push_back(p);
  }
  return points;
}

// Right-aligned to `width` characters on screen ("±" is two bytes, one character).
std::string pad(const std::string& s, size_t width) {
  size_t chars = 0;
  for (char ch : s) chars += (static_cast<unsigned char>(ch) & 0xc0) != 0x80;
  return std::string(width > chars ? width - chars : 0, ' ') + s;
}

std::string fmt(const char* format, double a, double b = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

// tg against its roofline: each repetition against the bandwidth probed just
// before it, averaged over repetitions.
struct Roofline {
  double tok_per_s = 0;  // mean of bandwidth / bytes per token
  double fraction = 0;   // mean of tok/s ÷ that repetition's roofline
};

Roofline roofline_of(const TestResult& t) {
  Roofline l;
  const size_t n = std::min(t.bandwidth.size(), t.tok_per_s.size());
  for (size_t i = 0; i < n; ++i) {
    const double limit = t.bandwidth[i] / t.bytes_per_token;
    l.tok_per_s += limit / double(n);
    l.fraction += t.tok_per_s[i] / limit / double(n);
  }
  return l;
}

// Tensor parallel: per token and per step, what rank 0's collectives moved and took.
void print_comm(const Model& model, bool greedy, const std::vector<TestResult>& tests) {
  if (model.tp() == 1) return;
  std::printf(
      "\ncommunication, rank 0 of %d, %s (time in collectives includes waiting for the others)\n",
      model.tp(), greedy ? "greedy: slice maxima gathered" : "full logits gathered");
  for (const TestResult& t : tests) {
    const CommUse& u = t.comm;
    if (u.tokens == 0 || u.steps == 0) continue;
    const double tok = double(u.tokens);
    std::printf(
        "%-6s %.1f messages/token, %s sent + %s received per token, %.3f ms/step in "
        "collectives (%.1f %% of the time)\n",
        t.name.c_str(), double(u.comm.messages) / tok,
        human_bytes(double(u.comm.bytes_sent) / tok).c_str(),
        human_bytes(double(u.comm.bytes_received) / tok).c_str(),
        1e3 * u.comm.seconds / double(u.steps), 100.0 * u.comm.seconds / u.seconds);
  }
}

nlohmann::json comm_json(const CommUse& u) {
  const double tok = double(std::max<int64_t>(u.tokens, 1));
  return {{"messages_per_token", double(u.comm.messages) / tok},
          {"bytes_sent_per_token", double(u.comm.bytes_sent) / tok},
          {"bytes_received_per_token", double(u.comm.bytes_received) / tok},
          {"seconds_per_step", u.comm.seconds / double(std::max<int64_t>(u.steps, 1))},
          {"fraction_of_time", u.seconds > 0 ? u.comm.seconds / u.seconds : 0.0}};
}

void print_table(const BenchFlags& f, const Model& model, const ReadBandwidth& bw,
                 const std::vector<TestResult>& tests) {
  std::printf("model      %s (%s, %.1f M params)\n", f.model.c_str(),
              model.config().arch_name.c_str(), double(model.n_params()) / 1e6);
  std::printf("threads    %d%s, simd %s, KV %s\n", f.threads,
              model.tp() > 1 ? (" per rank, " + std::to_string(model.tp()) +
                                " tensor-parallel "
                                "ranks (weights and KV of rank 0 in the roofline)")
                                   .c_str()
                             : "",
              simd_level_name(simd_level()).c_str(), f.kv.describe().c_str());
  std::printf("bandwidth  %.1f GB/s memory read (best of %d passes over %s; mean %.1f GB/s)\n\n",
              bw.best_bytes_per_second / 1e9, bw.passes,
              human_bytes(double(bw.buffer_bytes)).c_str(), bw.mean_bytes_per_second / 1e9);
  std::printf("| %-6s | %18s | %9s | %16s | %8s | %14s | %8s |\n", "test", "tok/s", "ms/tok",
              "GFLOP/s", "GB/s", "roofline tok/s", "% roof");
  std::printf(
      "|--------|--------------------|-----------|------------------|----------|-------"
      "---------|----------|\n");
  for (const TestResult& t : tests) {
    const Stats s = stats_of(t.tok_per_s);
    const std::string tps = fmt("%.1f ± %.1f", s.mean, s.stddev);
    std::string gflops = "-", gbs = "-", roof = "-", pct = "-";
    if (t.flops > 0) {
      std::vector<double> g;
      for (double v : t.tok_per_s) g.push_back(t.flops * v / t.n_tokens / 1e9);
      const Stats gs = stats_of(g);
      gflops = fmt("%.1f ± %.1f", gs.mean, gs.stddev);
    }
    if (t.bytes_per_token > 0) {
      const Roofline l = roofline_of(t);
      gbs = fmt("%.1f", s.mean * t.bytes_per_token / 1e9);
      roof = fmt("%.1f", l.tok_per_s);
      pct = fmt("%.1f %%", 100.0 * l.fraction);
    }
    std::printf("| %-6s | %s | %9.3f | %s | %8s | %14s | %8s |\n", t.name.c_str(),
                pad(tps, 18).c_str(), 1e3 / s.mean, pad(gflops, 16).c_str(), gbs.c_str(),
                roof.c_str(), pct.c_str());
  }
  for (const TestResult& t : tests) {
    if (t.bandwidth.empty()) continue;
    const auto [lo, hi] = std::minmax_element(t.bandwidth.begin(), t.bandwidth.end());
    std::printf("\n%s roofline: bandwidth probed right before each repetition, %.1f-%.1f GB/s\n",
                t.name.c_str(), *lo / 1e9, *hi / 1e9);
  }
}

nlohmann::json to_json(const BenchFlags& f, const Model& model, const ReadBandwidth& bw,
                       const std::vector<TestResult>& tests, const std::vector<SweepPoint>& sweep) {
  nlohmann::json j;
  j["model"] = f.model;
  j["n_params"] = model.n_params();
  j["threads"] = f.threads;
  j["tp"] = model.tp();
  j["simd"] = simd_level_name(simd_level());
  j["kv_type"] = f.kv.describe();
  j["repetitions"] = f.repetitions;
  j["bandwidth"] = {{"best_bytes_per_s", bw.best_bytes_per_second},
                    {"mean_bytes_per_s", bw.mean_bytes_per_second},
                    {"buffer_bytes", bw.buffer_bytes},
                    {"passes", bw.passes}};
  j["tests"] = nlohmann::json::array();
  for (const TestResult& t : tests) {
    const Stats s = stats_of(t.tok_per_s);
    nlohmann::json e = {{"name", t.name},
                        {"n_tokens", t.n_tokens},
                        {"tok_per_s", t.tok_per_s},
                        {"tok_per_s_mean", s.mean},
                        {"tok_per_s_stddev", s.stddev}};
    if (model.tp() > 1) e["communication"] = comm_json(t.comm);
    if (t.flops > 0) {
      e["flops_per_run"] = t.flops;
      e["gflop_per_s_mean"] = t.flops * s.mean / t.n_tokens / 1e9;
    }
    if (t.bytes_per_token > 0) {
      const Roofline l = roofline_of(t);
      e["bytes_per_token"] = t.bytes_per_token;
      e["bandwidth_per_repetition"] = t.bandwidth;
      e["roofline_tok_per_s"] = l.tok_per_s;
      e["roofline_fraction"] = l.fraction;
    }
    j["tests"].push_back(e);
  }
  if (!sweep.empty()) {
    j["ctx_sweep"] = nlohmann::json::array();
    for (const SweepPoint& p : sweep)
      j["ctx_sweep"].push_back({{"n_past", p.n_past},
                                {"decodes", f.sweep_decodes},
                                {"tok_per_s_mean", p.tok_per_s.mean},
                                {"tok_per_s_stddev", p.tok_per_s.stddev},
                                {"roofline_tok_per_s", p.roofline_tok_per_s}});
  }
  return j;
}

void validate(const BenchFlags& f) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("bench: " + what);
  };
  require(f.n_prompt >= 0 && f.n_gen >= 0, "-p and -n must be >= 0");
  require(f.threads >= 1, "-t must be >= 1 (got " + std::to_string(f.threads) + ")");
  require(f.repetitions >= 1, "-r must be >= 1 (got " + std::to_string(f.repetitions) + ")");
  require(f.ctx_sweep >= 0 && f.ctx_step >= 1 && f.sweep_decodes >= 1,
          "--ctx-sweep must be >= 0, --ctx-step and --sweep-decodes >= 1");
}

void bench(const BenchFlags& flags) {
  validate(flags);
  BenchFlags f = flags;
  f.model = resolve_model_path(f.model).string();
  // Under mpirun every rank runs the same deterministic tests on its share.
  Communicator* comm = tensor_parallel_world(f.tp);
  const auto model = Model::load(f.model, comm);
  if (comm) start_tp_deadline(*comm, f.tp_timeout);
  f.loading.lock_memory();
  const KvFormat kv = f.kv.format();
  const CostModel cost(*model, kv);
  ThreadPool pool(f.threads);
  const int longest =
      std::max({f.n_prompt, f.n_gen, f.ctx_sweep > 0 ? f.ctx_sweep + f.sweep_decodes : 0, 1});
  SequenceRunner runner(*model, pool,
                        {.n_ctx = longest,
                         .max_batch = f.batch,
                         .kv_format = kv,
                         .argmax_only = f.greedy,
                         .comm = comm});
  const std::vector<int32_t> tokens = bench_tokens(longest, model->config().n_vocab);

  std::fprintf(stderr, "bench: measuring memory read bandwidth on %d threads\n", f.threads);
  const ReadBandwidth bw = measure_read_bandwidth(pool);
  std::vector<TestResult> tests;
  if (f.n_prompt > 0) tests.push_back(run_pp(f, runner, cost, tokens));
  if (f.n_gen > 0) {
    ReadBandwidthProbe probe(pool);
    tests.push_back(run_tg(f, runner, cost, tokens, probe));
  }
  std::vector<SweepPoint> sweep;
  if (f.ctx_sweep > 0) sweep = run_sweep(f, runner, cost, tokens, bw.best_bytes_per_second);
  if (f.json) {
    std::printf("%s\n", to_json(f, *model, bw, tests, sweep).dump(2).c_str());
  } else {
    print_table(f, *model, bw, tests);
    print_comm(*model, f.greedy, tests);
    for (const SweepPoint& p : sweep)
      std::printf("ctx %5d: %.1f ± %.1f tok/s (roofline %.1f)\n", p.n_past, p.tok_per_s.mean,
                  p.tok_per_s.stddev, p.roofline_tok_per_s);
  }
}

void declare_flags(CLI::App& sub, BenchFlags& f) {
  sub.add_option("-p,--n-prompt", f.n_prompt, "prefill test length in tokens (0: skip)")
      ->capture_default_str();
  sub.add_option("-n,--n-gen", f.n_gen, "decode test length in tokens (0: skip)")
      ->capture_default_str();
  f.add_threads_flag(sub);
  f.add_tp_flag(sub);
  sub.add_option("-r,--repetitions", f.repetitions, "timed runs per test, after one warm-up")
      ->capture_default_str();
  add_batch_size_flag(sub, f.batch, "tokens per prefill forward pass");
  sub.add_option("--ctx-sweep", f.ctx_sweep,
                 "also time decode with 0, step, ..., N tokens already cached")
      ->capture_default_str();
  sub.add_option("--ctx-step", f.ctx_step, "spacing of the context sweep")->capture_default_str();
  sub.add_option("--sweep-decodes", f.sweep_decodes, "decodes timed per sweep point")
      ->capture_default_str();
  sub.add_flag("--json", f.json, "JSON on stdout instead of a table");
  sub.add_flag("--greedy", f.greedy,
               "logits for greedy sampling only: under mpirun each rank sends its vocabulary "
               "slice's maximum instead of its logits");
  f.kv.add_to(sub);
}

}  // namespace

void declare_bench_command(CLI::App& sub) {
  declare_model_command<BenchFlags>(sub, bench, declare_flags);
}

}  // namespace kvforge::cli
