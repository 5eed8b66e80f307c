// argmax_checked at every SIMD level against the scalar reference, and the
// reference against its definition: the lowest index of the largest value,
// or the lowest index of a NaN or +inf. Exact: no arithmetic, only compares.
#include "core/ops/argmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "formats_test_util.h"
#include "simd_levels.h"

namespace kvforge {
namespace {

// The definition, written independently of the kernels' single pass.
ArgmaxResult by_definition(const std::vector<float>& x) {
  ArgmaxResult r;
  for (size_t i = 0; i < x.size(); ++i)
    if (std::isnan(x[i]) || x[i] == INFINITY) {
      r.first_invalid = int64_t(i);
      return r;
    }
  float max = -INFINITY;
  for (float v : x) max = std::fmax(max, v);
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] == max) {
      r.index = int64_t(i);
      break;
    }
  return r;
}

void expect_every_level(const std::vector<float>& x, const std::string& what) {
  const ArgmaxResult want = by_definition(x);
  const int64_t n = int64_t(x.size());
  const ArgmaxResult ref = argmax_checked_scalar(x.data(), n);
  ASSERT_EQ(ref.first_invalid, want.first_invalid) << "scalar, " << what;
  if (want.first_invalid < 0) {
    ASSERT_EQ(ref.index, want.index) << "scalar, " << what;
  }
  testing::SimdLevelGuard guard;
  for (SimdLevel level : testing::available_simd_levels()) {
    set_simd_level(level);
    const ArgmaxResult got = argmax_checked(x.data(), n);
    ASSERT_EQ(got.first_invalid, want.first_invalid) << simd_level_name(level) << ", " << what;
    if (want.first_invalid < 0) {
      ASSERT_EQ(got.index, want.index) << simd_level_name(level) << ", " << what;
    }
  }
}

const int64_t kSizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 32000};

std::vector<float> normal_values(int64_t n, uint32_t seed) {
  return testing::gaussian(size_t(n), seed, 3.0f);
}

TEST(ArgmaxChecked, FindsThePlantedMaximumAtEveryPosition) {
  for (int64_t n : kSizes) {
    // Every position for the short ones; the tails and a spread for the rest.
    for (int64_t at = 0; at < n; at += (n <= 100 || at >= n - 70 ? 1 : 97)) {
      std::vector<float> x = normal_values(n, uint32_t(n * 131 + at));
      x[size_t(at)] = 50.0f;
      expect_every_level(x, "n " + std::to_string(n) + ", max at " + std::to_string(at));
    }
  }
}

TEST(ArgmaxChecked, TiesGoToTheLowestIndexAndSignedZerosTie) {
  for (int64_t n : kSizes) {
    std::vector<float> x = normal_values(n, uint32_t(n));
    for (float& v : x) v = std::min(v, 1.0f);
    x[size_t(n - 1)] = 2.0f;
    x[size_t(n / 2)] = 2.0f;
    expect_every_level(x, "ties, n " + std::to_string(n));
    std::vector<float> zeros(size_t(n), -1.0f);
    zeros[size_t(n - 1)] = 0.0f;
    zeros[size_t(n / 3)] = -0.0f;
    expect_every_level(zeros, "signed zeros, n " + std::to_string(n));
  }
}

TEST(ArgmaxChecked, NegativeInfinityIsAValueAndAllOfItGivesIndexZero) {
  for (int64_t n : kSizes) {
    std::vector<float> x(size_t(n), -INFINITY);
    expect_every_level(x, "all -inf, n " + std::to_string(n));
    EXPECT_EQ(argmax_checked(x.data(), n).index, 0);
    x[size_t(n - 1)] = -1e30f;
    expect_every_level(x, "-inf but the last, n " + std::to_string(n));
  }
}

TEST(ArgmaxChecked, ReportsTheFirstNanOrPositiveInfinity) {
  for (int64_t n : kSizes) {
    for (int64_t at : {int64_t(0), n / 2, n - 1}) {
      for (float bad : {NAN, INFINITY}) {
        std::vector<float> x = normal_values(n, uint32_t(n + at));
        x[size_t(at)] = bad;
        if (at + 1 < n) x[size_t(n - 1)] = bad == INFINITY ? NAN : INFINITY;  // a later one
        expect_every_level(x, "invalid at " + std::to_string(at) + ", n " + std::to_string(n));
        EXPECT_EQ(argmax_checked(x.data(), n).first_invalid, at);
      }
    }
  }
}

}  // namespace
}  // namespace kvforge
