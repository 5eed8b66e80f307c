// The per-token vector ops between the matmuls, at each SIMD level this
// machine has, single-threaded as decode runs them:
//   swiglu  over one decode step's n_ff = 2048 values (the default preset's);
//   argmax  greedy sampling's pass over a 32000-token vocabulary of logits.
// After the runs: each level's time against the scalar level, measured in
// this run.
//
//   activation_bench [--benchmark_min_time=0.2]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/ops/activation.h"
#include "core/ops/argmax.h"

namespace kvforge {
namespace {

using SwigluFn = void (*)(const float*, const float*, int64_t, float*);
using ArgmaxFn = ArgmaxResult (*)(const float*, int64_t);

std::vector<float> normal_values(int64_t n, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

void run_swiglu(benchmark::State& state, SwigluFn fn, bool available) {
  if (!available) {
    state.SkipWithError("SIMD level not available on this machine");
    return;
  }
  const int64_t n = state.range(0);
  const std::vector<float> gate = normal_values(n, 1, 2.0f), up = normal_values(n, 2, 2.0f);
  std::vector<float> out(gate.size());
  for (auto _ : state) {
    fn(gate.data(), up.data(), n, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}

// Logits with their maximum in the middle: the second pass reads half.
void run_argmax(benchmark::State& state, ArgmaxFn fn, bool available) {
  if (!available) {
    state.SkipWithError("SIMD level not available on this machine");
    return;
  }
  const int64_t n = state.range(0);
  std::vector<float> logits = normal_values(n, 3, 3.0f);
  logits[size_t(n / 2)] = 100.0f;
  for (auto _ : state) {
    benchmark::DoNotOptimize(fn(logits.data(), n));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}

// Prints each op's SIMD levels against its scalar level after the runs.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (!r.error_occurred) ns_[r.benchmark_name()] = r.GetAdjustedCPUTime();
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n");
    const char* const ops[][2] = {{"swiglu, 2048 values", "swiglu/%s/2048"},
                                  {"argmax, 32000 logits", "argmax/%s/32000"}};
    for (const auto& [label, op] : ops) {
      const auto scalar = ns_.find(name(op, "scalar"));
      if (scalar == ns_.end()) continue;
      std::printf("%s: scalar %.2f us", label, scalar->second / 1e3);
      for (const char* level : {"avx2", "avx512"}) {
        const auto it = ns_.find(name(op, level));
        if (it != ns_.end())
          std::printf(", %s %.2f us (%.1fx)", level, it->second / 1e3, scalar->second / it->second);
      }
      std::printf("\n");
    }
  }

 private:
  static std::string name(const char* pattern, const char* level) {
    char buf[64];
    std::snprintf(buf, sizeof buf, pattern, level);
    return buf;
  }
  std::map<std::string, double> ns_;
};

}  // namespace
}  // namespace kvforge

int main(int argc, char** argv) {
  using namespace kvforge;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma;
  const bool avx512 = f.avx512f && f.avx512dq && f.avx512vl;
  benchmark::RegisterBenchmark("swiglu/scalar", run_swiglu, swiglu_scalar, true)->Arg(2048);
  benchmark::RegisterBenchmark("swiglu/avx2", run_swiglu, swiglu_avx2, avx2)->Arg(2048);
  benchmark::RegisterBenchmark("swiglu/avx512", run_swiglu, swiglu_avx512, avx512)->Arg(2048);
  benchmark::RegisterBenchmark("argmax/scalar", run_argmax, argmax_checked_scalar, true)
      ->Arg(32000);
  benchmark::RegisterBenchmark("argmax/avx2", run_argmax, argmax_checked_avx2, avx2)->Arg(32000);
  benchmark::RegisterBenchmark("argmax/avx512", run_argmax, argmax_checked_avx512, avx512)
      ->Arg(32000);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
