// The delta rule of Qwen 3.5's linear attention (core/ops/gated_delta.h)
// over one value head of d = 128 (the published models' head) for 256
// tokens, single-threaded as a prefill work item runs it: token by token
// (the recurrence the model runs) and in 64-token chunks
// (core/ops/gated_delta_chunked.h), at each SIMD level this machine has.
// items_per_second = tokens per second of one head.
//
//   gated_delta_bench [--benchmark_min_time=0.2]
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/ops/gated_delta.h"
#include "core/ops/gated_delta_chunked.h"

namespace kvforge {
namespace {

constexpr int kD = 128, kTokens = 256;

struct Head {
  std::vector<float> q, k, v, decay_log, beta, state, out;
  Head() {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto* vec : {&q, &k, &v}) {
      vec->resize(size_t(kD) * kTokens);
      for (float& x : *vec) x = normal(rng);
    }
    for (int t = 0; t < kTokens; ++t) {
      l2_norm(&q[size_t(t) * kD], kD, 1e-6f);
      l2_norm(&k[size_t(t) * kD], kD, 1e-6f);
      decay_log.push_back(-0.1f);
      beta.push_back(0.5f);
    }
    state.assign(size_t(kD) * kD, 0.0f);
    out.resize(size_t(kD) * kTokens);
  }
};

bool level_available(SimdLevel level) {
  const CpuFeatures& f = cpu_features();
  return level == SimdLevel::Scalar || (level == SimdLevel::Avx2 && f.avx2 && f.fma) ||
         (level == SimdLevel::Avx512 && f.avx512f && f.avx512dq);
}

void recurrence(benchmark::State& st, SimdLevel level) {
  if (!level_available(level)) return st.SkipWithError("SIMD level not on this machine");
  const auto fn = level == SimdLevel::Avx512 ? gated_delta_rule_token_avx512
                  : level == SimdLevel::Avx2 ? gated_delta_rule_token_avx2
                                             : gated_delta_rule_token_scalar;
  Head h;
  for (auto _ : st)
    for (int t = 0; t < kTokens; ++t) {
      const size_t at = size_t(t) * kD;
      fn(h.state.data(), &h.q[at], &h.k[at], &h.v[at], h.decay_log[size_t(t)], h.beta[size_t(t)],
         kD, &h.out[at]);
    }
  st.SetItemsProcessed(int64_t(st.iterations()) * kTokens);
}

void chunked(benchmark::State& st, SimdLevel level) {
  if (!level_available(level)) return st.SkipWithError("SIMD level not on this machine");
  const auto fn = level == SimdLevel::Avx512 ? gated_delta_rule_chunked_avx512
                  : level == SimdLevel::Avx2 ? gated_delta_rule_chunked_avx2
                                             : gated_delta_rule_chunked_scalar;
  Head h;
  GatedDeltaChunkScratch scratch;
  for (auto _ : st)
    fn(h.state.data(), h.q.data(), h.k.data(), h.v.data(), h.decay_log.data(), h.beta.data(),
       kTokens, kD, h.out.data(), scratch);
  st.SetItemsProcessed(int64_t(st.iterations()) * kTokens);
}

BENCHMARK_CAPTURE(recurrence, scalar, SimdLevel::Scalar);
BENCHMARK_CAPTURE(recurrence, avx2, SimdLevel::Avx2);
BENCHMARK_CAPTURE(recurrence, avx512, SimdLevel::Avx512);
BENCHMARK_CAPTURE(chunked, scalar, SimdLevel::Scalar);
BENCHMARK_CAPTURE(chunked, avx2, SimdLevel::Avx2);
BENCHMARK_CAPTURE(chunked, avx512, SimdLevel::Avx512);

}  // namespace
}  // namespace kvforge

BENCHMARK_MAIN();
