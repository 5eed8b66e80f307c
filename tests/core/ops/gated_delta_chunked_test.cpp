// The chunked form of the delta rule (core/ops/gated_delta_chunked.h)
// against the token-by-token recurrence (the scalar reference of
// core/ops/gated_delta.h), on the same inputs: outputs and final state.
//
// Bound: the two agree in exact arithmetic. In f32 the chunked form sums
// in another order, takes the decays as exp of summed logs instead of a
// product of exps (relative ~t · 2^-24 after t tokens of a chunk, t <= 64:
// ~4e-6), and solves for each token's write by forward substitution over
// the chunk's earlier tokens, whose rounding the (1 − β k kᵀ) factors keep
// from growing (unit keys, β < 1). Measured: 2.4e-7 of the largest
// value (d = 16 and 128, four chunks and a bit, every level). kRelBound =
// 1e-5 of the largest value leaves a factor ~40 for other draws.
#include "core/ops/gated_delta_chunked.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/ops/gated_delta.h"

namespace kvforge {
namespace {
namespace gated_delta_chunked {  // the unity build joins this file with others

constexpr float kRelBound = 1e-5f;

struct Inputs {
  int d = 0, n = 0;
  std::vector<float> q, k, v, decay_log, beta;
};

Inputs random_inputs(int d, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  Inputs in{d, n, {}, {}, {}, {}, {}};
  for (auto* vec : {&in.q, &in.k, &in.v}) {
    vec->resize(size_t(d) * size_t(n));
    for (float& x : *vec) x = normal(rng);
  }
  for (int t = 0; t < n; ++t) {
    l2_norm(in.q.data() + size_t(t) * size_t(d), d, 1e-6f);
    l2_norm(in.k.data() + size_t(t) * size_t(d), d, 1e-6f);
    in.decay_log.push_back(-2.0f * unit(rng));
    in.beta.push_back(0.02f + 0.96f * unit(rng));
  }
  return in;
}

// Outputs [n][d], then the final state [d][d], from a start state of ones/d.
std::vector<float> recurrence(const Inputs& in) {
  const size_t d = size_t(in.d);
  std::vector<float> state(d * d, 1.0f / float(d)), out(d * size_t(in.n) + d * d);
  for (int t = 0; t < in.n; ++t)
    gated_delta_rule_token_scalar(state.data(), &in.q[t * d], &in.k[t * d], &in.v[t * d],
                                  in.decay_log[size_t(t)], in.beta[size_t(t)], in.d, &out[t * d]);
  std::copy(state.begin(), state.end(), out.end() - ptrdiff_t(d * d));
  return out;
}

using ChunkedFn = void (*)(float*, const float*, const float*, const float*, const float*,
                           const float*, int, int, float*, GatedDeltaChunkScratch&);

std::vector<float> chunked(ChunkedFn fn, const Inputs& in) {
  const size_t d = size_t(in.d);
  std::vector<float> state(d * d, 1.0f / float(d)), out(d * size_t(in.n) + d * d);
  GatedDeltaChunkScratch scratch;
  fn(state.data(), in.q.data(), in.k.data(), in.v.data(), in.decay_log.data(), in.beta.data(), in.n,
     in.d, out.data(), scratch);
  std::copy(state.begin(), state.end(), out.end() - ptrdiff_t(d * d));
  return out;
}

TEST(GatedDeltaChunked, EveryLevelGivesTheRecurrence) {
  const CpuFeatures& f = cpu_features();
  const struct {
    const char* name;
    ChunkedFn fn;
    bool available;
  } levels[] = {{"scalar", gated_delta_rule_chunked_scalar, true},
                {"avx2", gated_delta_rule_chunked_avx2, f.avx2 && f.fma},
                {"avx512", gated_delta_rule_chunked_avx512, f.avx512f && f.avx512dq}};
  // 16 and 128 wide heads; 1 token, a partial chunk, and 4 chunks and a bit.
  for (int d : {16, 128})
    for (int n : {1, 37, 4 * kGatedDeltaChunk + 5}) {
      const Inputs in = random_inputs(d, n, uint32_t(d * 1000 + n));
      const std::vector<float> want = recurrence(in);
      float scale = 0;
      for (float x : want) scale = std::max(scale, std::abs(x));
      for (const auto& level : levels) {
        if (!level.available) continue;
        SCOPED_TRACE(std::string(level.name) + " d=" + std::to_string(d) +
                     " n=" + std::to_string(n));
        const std::vector<float> got = chunked(level.fn, in);
        float worst = 0;
        for (size_t i = 0; i < want.size(); ++i)
          worst = std::max(worst, std::abs(got[i] - want[i]));
        EXPECT_LE(worst, kRelBound * scale);
        if (n > kGatedDeltaChunk)
          std::printf("%-6s d=%3d n=%3d max |chunked - recurrence| %.2e (largest value %.2f)\n",
                      level.name, d, n, double(worst), double(scale));
      }
    }
}

}  // namespace gated_delta_chunked
}  // namespace
}  // namespace kvforge
