// SwiGLU at every SIMD level against the scalar definition (std::exp).
//
// Tolerance: the SIMD levels' e^x has a relative error of about 2e-7, and
// 1 + e^x, the division and the product add three roundings (6e-8 each), so
// a result is within 5e-7 of the reference, relatively. Where e^-g
// overflows (gates below -88.7) both give g / inf = -0; just above, the
// reference's quotient is a denormal or ~1e-38 that the division rounds
// differently, hence a 1e-30 * |u| absolute term.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/ops/activation.h"

namespace kvforge {
namespace {

using SwigluFn = void (*)(const float*, const float*, int64_t, float*);

struct Level {
  const char* name;
  SwigluFn fn;
  bool available;
};

std::vector<Level> simd_levels() {
  const CpuFeatures& f = cpu_features();
  return {{"avx2", swiglu_avx2, f.avx2 && f.fma},
          {"avx512", swiglu_avx512, f.avx512f && f.avx512dq && f.avx512vl}};
}

std::vector<float> gates_with_extremes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  std::vector<float> g(n);
  for (float& v : g) v = dist(rng);
  const float extremes[] = {0.0f,  -0.0f,  1e-30f, -1e-30f, 20.0f, -20.0f, 87.0f, -87.0f,
                            88.5f, -88.5f, 100.0f, -100.0f, 1e30f, -1e30f, 1e-40f};
  for (size_t i = 0; i < std::size(extremes) && i < n; ++i) g[i * 3 % n] = extremes[i];
  return g;
}

TEST(Swiglu, EveryLevelMatchesTheScalarDefinition) {
  for (const Level& level : simd_levels()) {
    if (!level.available) {
      GTEST_LOG_(INFO) << level.name << " not on this CPU: skipped";
      continue;
    }
    for (size_t n : {1u, 7u, 8u, 15u, 16u, 17u, 33u, 2048u, 2051u}) {
      const std::vector<float> g = gates_with_extremes(n, uint32_t(n));
      std::vector<float> u = gates_with_extremes(n, uint32_t(n) + 99);
      std::vector<float> want(n), got(n);
      swiglu_scalar(g.data(), u.data(), int64_t(n), want.data());
      level.fn(g.data(), u.data(), int64_t(n), got.data());
      for (size_t i = 0; i < n; ++i) {
        if (std::isinf(want[i])) {  // g * u overflowed (gates and ups of 1e30)
          ASSERT_EQ(got[i], want[i]) << level.name << " n=" << n << " i=" << i;
          continue;
        }
        const double bound = 5e-7 * std::fabs(double(want[i])) + 1e-30 * (1.0 + std::fabs(u[i]));
        ASSERT_LE(std::fabs(double(got[i]) - double(want[i])), bound)
            << level.name << " n=" << n << " i=" << i << " gate " << g[i] << " up " << u[i];
      }
    }
  }
}

// An element's bits do not depend on n or on whether it falls in the SIMD
// body or the tail: a prefix of any length gives the prefix of the full result.
TEST(Swiglu, ElementResultsDoNotDependOnLength) {
  const size_t n = 50;
  const std::vector<float> g = gates_with_extremes(n, 5), u = gates_with_extremes(n, 6);
  for (const Level& level : simd_levels()) {
    if (!level.available) continue;
    std::vector<float> full(n);
    level.fn(g.data(), u.data(), int64_t(n), full.data());
    for (size_t len = 1; len <= n; ++len) {
      std::vector<float> part(len);
      level.fn(g.data(), u.data(), int64_t(len), part.data());
      ASSERT_EQ(0, std::memcmp(part.data(), full.data(), len * sizeof(float)))
          << level.name << " length " << len;
    }
  }
}

TEST(Swiglu, NanGatePropagatesAndOutputMayAliasGate) {
  std::vector<Level> levels = simd_levels();
  levels.push_back({"scalar", swiglu_scalar, true});
  for (const Level& level : levels) {
    if (!level.available) continue;
    std::vector<float> g(19, 1.5f), u(19, 2.0f);
    g[3] = std::nanf("");
    g[17] = std::nanf("");
    std::vector<float> separate(19);
    level.fn(g.data(), u.data(), 19, separate.data());
    EXPECT_TRUE(std::isnan(separate[3])) << level.name;
    EXPECT_TRUE(std::isnan(separate[17])) << level.name;
    EXPECT_NEAR(separate[0], 1.5 / (1.0 + std::exp(-1.5)) * 2.0, 1e-6) << level.name;
    level.fn(g.data(), u.data(), 19, g.data());  // in place
    for (size_t i = 0; i < 19; ++i) {
      if (std::isnan(separate[i])) continue;
      EXPECT_EQ(g[i], separate[i]) << level.name << " i=" << i;
    }
  }
}

}  // namespace
}  // namespace kvforge
