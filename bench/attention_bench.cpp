// The attention kernel per KV format and SIMD level: one GQA group of the
// `small` preset (3 query heads sharing a KV head of 64 dims) attending over
// 512 / 2048 / 4096 cached positions (decode), and groups of 1 and 8 heads
// over 2048. Bytes/s counts the K and V records read per call; items/s
// counts (position, query head) pairs. The cache of one head
// (4096 positions: 1 MiB in f32, 0.5 MiB in f16) stays in L2, so these
// figures show compute cost per format; the end-to-end effect of fewer bytes
// from DRAM is what `kvforge kv-bench` measures.
//
//   attention_bench [--benchmark_filter=int8] [--benchmark_min_time=0.2s]
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/ops/attention.h"

namespace kvforge {
namespace {

constexpr int kHeadDim = 64;

void BM_Attention(benchmark::State& state, KvDtype type, SimdLevel level) {
  const int n = int(state.range(0));
  const int group = int(state.range(1));  // query heads sharing the KV head
  set_simd_level(level);
  if (simd_level() != level) {
    state.SkipWithError("SIMD level not available");
    return;
  }
  const size_t rec = kv_head_bytes(type, kHeadDim);
  std::vector<uint8_t> k(size_t(n) * rec), v(size_t(n) * rec);
  std::mt19937 rng(1);
  std::normal_distribution<float> g;
  std::vector<float> x(kHeadDim);
  for (int p = 0; p < n; ++p) {
    for (auto& e : x) e = g(rng);
    kv_encode_head(type, x.data(), k.data() + size_t(p) * rec, kHeadDim);
    for (auto& e : x) e = g(rng);
    kv_encode_head(type, x.data(), v.data() + size_t(p) * rec, kHeadDim);
  }
  KvSpan span;
  span.k = k.data();
  span.v = v.data();
  span.k_pos_stride = span.v_pos_stride = rec;
  span.k_head_stride = span.v_head_stride = rec;
  span.n = n;
  std::vector<float> q(size_t(group) * kHeadDim), out(size_t(group) * kHeadDim);
  for (auto& e : q) e = g(rng);
  std::vector<float> scratch(attention_scratch_floats(kHeadDim));
  const float scale = 1.0f / std::sqrt(float(kHeadDim));
  for (auto _ : state) {
    attend_heads(q.data(), group, &span, 1, n, 0, kHeadDim, {type, type}, scale, out.data(),
                 scratch.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n * group);
  state.SetBytesProcessed(state.iterations() * int64_t(2 * rec) * n);
}

void register_all() {
  for (KvDtype t : kAllKvDtypes)
    for (SimdLevel l : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
      const std::string name =
          std::string("attention/") + kv_dtype_name(t) + "/" + simd_level_name(l);
      benchmark::RegisterBenchmark(name.c_str(), BM_Attention, t, l)
          ->ArgNames({"pos", "heads"})
          ->Args({512, 3})
          ->Args({2048, 3})
          ->Args({4096, 3})
          ->Args({2048, 1})
          ->Args({2048, 8});
    }
}

}  // namespace
}  // namespace kvforge

int main(int argc, char** argv) {
  kvforge::register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
