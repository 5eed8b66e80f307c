// SwiGLU over one decode step's n_ff = 2048 values (the default preset's),
// at each SIMD level this machine has, single-threaded as decode runs it.
// After the runs: each level's time against the scalar level (std::exp),
// measured in this run.
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

namespace kvforge {
namespace {

using SwigluFn = void (*)(const float*, const float*, int64_t, float*);

void run_swiglu(benchmark::State& state, SwigluFn fn, bool available) {
  if (!available) {
    state.SkipWithError("SIMD level not available on this machine");
    return;
  }
  const int64_t n = state.range(0);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> gate(static_cast<size_t>(n)), up(gate.size()), out(gate.size());
  for (float& v : gate) v = dist(rng);
  for (float& v : up) v = dist(rng);
  for (auto _ : state) {
    fn(gate.data(), up.data(), n, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}

// Prints each level's speed-up over scalar after the runs.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (!r.error_occurred) ns_[r.benchmark_name()] = r.GetAdjustedCPUTime();
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    const auto scalar = ns_.find("swiglu/scalar/2048");
    if (scalar == ns_.end()) return;
    std::printf("\nswiglu, 2048 values: scalar %.2f us", scalar->second / 1e3);
    for (const char* level : {"avx2", "avx512"}) {
      const auto it = ns_.find(std::string("swiglu/") + level + "/2048");
      if (it != ns_.end())
        std::printf(", %s %.2f us (%.1fx)", level, it->second / 1e3, scalar->second / it->second);
    }
    std::printf("\n");
  }

 private:
  std::map<std::string, double> ns_;
};

}  // namespace
}  // namespace kvforge

int main(int argc, char** argv) {
  using namespace kvforge;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const CpuFeatures& f = cpu_features();
  benchmark::RegisterBenchmark("swiglu/scalar", run_swiglu, swiglu_scalar, true)->Arg(2048);
  benchmark::RegisterBenchmark("swiglu/avx2", run_swiglu, swiglu_avx2, f.avx2 && f.fma)->Arg(2048);
  benchmark::RegisterBenchmark("swiglu/avx512", run_swiglu, swiglu_avx512,
                               f.avx512f && f.avx512dq && f.avx512vl)
      ->Arg(2048);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
