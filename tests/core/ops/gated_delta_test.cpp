// The delta rule (core/ops/gated_delta.h) at every SIMD level against the
// scalar reference, over a sequence of tokens on one value head.
//
// Tolerance: the levels differ only in summation order (lanes, then a tree)
// and in fused multiply-adds. Each S·k and S·q is a sum of d products of
// magnitude <= |S_ij| (k and q are unit vectors), so one step's difference
// is ~sqrt(d) · 2^-24 · |S| (~1e-6 at d = 128 for |S| ~ 1), and the state
// carries it on, damped by the decay and the (1 - β k kᵀ) contraction of
// each write: after 256 tokens the measured difference is below 1.5e-7 of
// the largest value (outputs and state). kRelBound = 2e-6 of it leaves a
// factor of ~10 for other draws.
#include "core/ops/gated_delta.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_features.h"

namespace kvforge {
namespace {
namespace gated_delta_levels {  // the unity build joins this file with others

using DeltaRuleFn = void (*)(float*, const float*, const float*, const float*, float, float, int,
                             float*);

struct Level {
  const char* name;
  DeltaRuleFn fn;
  bool available;
};

constexpr float kRelBound = 2e-6f;

// One head's inputs for n tokens: unit q, k; v ~ N(0, 1); log decays in
// [-2, 0); write strengths in (0, 1).
struct Tokens {
  int d = 0, n = 0;
  std::vector<float> q, k, v, decay_log, beta;
};

Tokens random_tokens(int d, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  Tokens t{d, n, {}, {}, {}, {}, {}};
  for (auto* vec : {&t.q, &t.k, &t.v}) {
    vec->resize(size_t(d) * size_t(n));
    for (float& x : *vec) x = normal(rng);
  }
  for (int i = 0; i < n; ++i) {
    l2_norm(t.q.data() + size_t(i) * size_t(d), d, 1e-6f);
    l2_norm(t.k.data() + size_t(i) * size_t(d), d, 1e-6f);
    t.decay_log.push_back(-2.0f * unit(rng));
    t.beta.push_back(0.02f + 0.96f * unit(rng));
  }
  return t;
}

// Outputs [n][d] then the final state [d][d].
std::vector<float> run(DeltaRuleFn fn, const Tokens& t) {
  const size_t d = size_t(t.d);
  std::vector<float> state(d * d, 0.0f), out(d * size_t(t.n) + d * d);
  for (int i = 0; i < t.n; ++i)
    fn(state.data(), t.q.data() + i * d, t.k.data() + i * d, t.v.data() + i * d, t.decay_log[i],
       t.beta[i], t.d, out.data() + i * d);
  std::copy(state.begin(), state.end(), out.begin() + ptrdiff_t(d * size_t(t.n)));
  return out;
}

TEST(GatedDelta, EveryLevelMatchesTheScalarRecurrence) {
  const CpuFeatures& f = cpu_features();
  const Level levels[] = {{"avx2", gated_delta_rule_token_avx2, f.avx2 && f.fma},
                          {"avx512", gated_delta_rule_token_avx512, f.avx512f && f.avx512dq}};
  for (int d : {16, 20, 32, 128}) {  // 20: a tail past the vector width
    const Tokens t = random_tokens(d, 256, uint32_t(d));
    const std::vector<float> want = run(gated_delta_rule_token_scalar, t);
    float scale = 0;
    for (float x : want) scale = std::max(scale, std::abs(x));
    for (const Level& level : levels) {
      if (!level.available) continue;
      SCOPED_TRACE(std::string(level.name) + " d=" + std::to_string(d));
      const std::vector<float> got = run(level.fn, t);
      float worst = 0;
      for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
      EXPECT_LE(worst, kRelBound * scale);
      std::printf("%-6s d=%3d max |simd - scalar| %.2e (largest value %.2f)\n", level.name, d,
                  double(worst), double(scale));
      EXPECT_EQ(got, run(level.fn, t)) << "the same inputs gave other bits";
    }
  }
}

TEST(GatedDelta, DispatchRunsTheChosenLevel) {
  const Tokens t = random_tokens(32, 8, 5);
  const DeltaRuleFn chosen = simd_level() == SimdLevel::Avx512 ? gated_delta_rule_token_avx512
                             : simd_level() == SimdLevel::Avx2 ? gated_delta_rule_token_avx2
                                                               : gated_delta_rule_token_scalar;
  EXPECT_EQ(run(gated_delta_rule_token, t), run(chosen, t));
}

}  // namespace gated_delta_levels
}  // namespace
}  // namespace kvforge
