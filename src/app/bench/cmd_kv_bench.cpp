// kvforge kv-bench: decode speed at long context per KV storage format, as
// ratios to f16 measured in the same run.
//
// The caches are filled with the same Gaussian K/V (N(0,1), one draw per
// value, written through each format's encoder) rather than by a prefill:
// decode speed does not depend on the values, and a 4096-token prefill of
// the small preset takes minutes on two shared cores. A measured decode step
// runs at position `ctx` exactly (it reads ctx cached positions plus its
// own), rewriting the same slot each time, so every timed step sees the same
// context. Formats are interleaved within each repetition; the median is kept.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/subcommand.h"
#include "engine/kv/contiguous_kv_cache.h"
#include "engine/kv/kv_memory_plan.h"
#include "model/forward.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct KvBenchFlags : ModelFlags {
  KvBenchFlags() { threads = 2; }
  std::vector<int> contexts = {2048, 4096};
  std::vector<std::string> types = {"f16", "int8", "q4"};
  int n_decode = 16;
  int reps = 5;
};

struct Bench {
  const Model& model;
  ThreadPool& pool;
  ForwardScratch scratch;
  std::vector<float> logits;
  Bench(const Model& m, ThreadPool& p)
      : model(m), pool(p), scratch(m.config()), logits(size_t(m.config().n_vocab) * 512) {
    scratch.reserve(512, p.size());
  }

  // Seconds per decode step at position `ctx`, over n steps.
  double decode_seconds(ContiguousKvCache& cache, int32_t ctx, int n) {
    const int32_t token = 7, pos = ctx, row = 0;
    const StepInputs in{std::span(&token, 1), std::span(&pos, 1), {}, std::span(&row, 1)};
    forward(model, in, cache, scratch, pool, logits.data());  // warm-up
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) forward(model, in, cache, scratch, pool, logits.data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void kv_bench(const KvBenchFlags& f) {
  const auto model = Model::load(resolve_model_path(f.model));
  f.loading.lock_memory();
  const ModelConfig& c = model->config();
  const int max_ctx = *std::max_element(f.contexts.begin(), f.contexts.end());
  ThreadPool pool(f.threads);
  Bench bench(*model, pool);
  std::vector<std::unique_ptr<ContiguousKvCache>> caches;
  for (const auto& name : f.types) {
    const auto t = kv_dtype_from_name(name);
    if (!t) throw std::invalid_argument("kv-bench: unknown KV type '" + name + "'");
    caches.push_back(std::make_unique<ContiguousKvCache>(c, max_ctx + 1, KvFormat{*t, *t}));
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> gauss;
  std::vector<float> k(static_cast<size_t>(c.kv_dim())), v(static_cast<size_t>(c.kv_dim()));
  for (int l = 0; l < c.n_layer; ++l)
    for (int32_t p = 0; p < max_ctx; ++p) {
      for (auto& x : k) x = gauss(rng);
      for (auto& x : v) x = gauss(rng);
      for (auto& cache : caches) cache->write(l, 0, p, k.data(), v.data());
    }
  // seconds[ctx][type][rep]
  std::vector<std::vector<std::vector<double>>> seconds(
      f.contexts.size(), std::vector<std::vector<double>>(f.types.size()));
  for (int r = 0; r < f.reps; ++r)
    for (size_t ci = 0; ci < f.contexts.size(); ++ci)
      for (size_t ti = 0; ti < f.types.size(); ++ti)
        seconds[ci][ti].push_back(bench.decode_seconds(*caches[ti], f.contexts[ci], f.n_decode));
  const ModelShape shape = ModelShape::from_config(c);
  std::printf("kv-bench: %s, %d threads, %d decode steps x %d repetitions (median)\n",
              shape.name.c_str(), f.threads, f.n_decode, f.reps);
  std::printf("%-6s %8s %14s %10s %12s %16s\n", "KV", "context", "decode tok/s", "vs f16",
              "KV bytes/tok", "2048-seq / GiB");
  for (size_t ci = 0; ci < f.contexts.size(); ++ci) {
    double base = 0;
    for (size_t ti = 0; ti < f.types.size(); ++ti)
      if (f.types[ti] == "f16") base = median(seconds[ci][ti]);
    for (size_t ti = 0; ti < f.types.size(); ++ti) {
      const double s = median(seconds[ci][ti]);
      const KvFormat fmt = caches[ti]->format();
      const uint64_t per_token = kv_bytes_per_token(shape, fmt);
      std::printf("%-6s %8d %14.2f %9.3fx %12llu %16lld\n", f.types[ti].c_str(), f.contexts[ci],
                  1.0 / s, base > 0 ? base / s : 0.0, static_cast<unsigned long long>(per_token),
                  static_cast<long long>(max_sequences_for(shape, fmt, 0, 2048, uint64_t(kGiB))));
    }
  }
}

void declare_flags(CLI::App& sub, KvBenchFlags& f) {
  sub.add_option("--contexts", f.contexts, "tokens already in cache")
      ->delimiter(',')
      ->capture_default_str();
  sub.add_option("--kv-types", f.types, "KV formats to compare (include f16 for ratios)")
      ->delimiter(',')
      ->capture_default_str();
  sub.add_option("-n,--n-decode", f.n_decode, "timed decode steps per measurement")
      ->capture_default_str();
  sub.add_option("-r,--repetitions,--reps", f.reps, "repetitions")->capture_default_str();
  f.add_threads_flag(sub);
}

}  // namespace

void declare_kv_bench_command(CLI::App& sub) {
  declare_model_command<KvBenchFlags>(sub, kv_bench, declare_flags);
}

}  // namespace kvforge::cli
