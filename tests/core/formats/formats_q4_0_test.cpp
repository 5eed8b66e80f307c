#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>

#include "core/formats/f16.h"
#include "core/formats/q4_0.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

TEST(Q4_0, BlockLayout) {
  EXPECT_EQ(offsetof(BlockQ4_0, d), 0u);
  EXPECT_EQ(offsetof(BlockQ4_0, qs), 2u);
}

// Element i < 16 is the low nibble of qs[i], element i + 16 the high nibble.
TEST(Q4_0, DequantizesHandBuiltBlock) {
  BlockQ4_0 b;
  b.d = 0x3555;  // 0.333251953125
  for (int i = 0; i < 16; ++i) b.qs[i] = uint8_t(i | ((15 - i) << 4));
  float out[32];
  dequantize_row_q4_0(&b, out, 32);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i], float(i - 8) * 0.333251953125f) << i;
    EXPECT_EQ(out[16 + i], float(7 - i) * 0.333251953125f) << i;
  }
}

// The published convention: d = max / -8 with max the signed largest-magnitude
// value, so max lands on nibble 0; q = min(15, trunc(x/d + 8.5)).
TEST(Q4_0, QuantizesAsPublished) {
  float x[32] = {};
  x[3] = 8.0f;    // max: d = -1, nibble 0
  x[5] = -8.0f;   // x/d = 8 -> 16.5 -> clamped to 15 (value -7): the clipped side
  x[20] = 2.5f;   // x/d = -2.5 -> 6.0 -> 6 (round half up in x/d + 8 terms)
  x[21] = -2.5f;  // x/d = 2.5 -> 11.0 -> 11
  x[22] = -7.4f;  // x/d = 7.4 -> 15.9 -> 15
  BlockQ4_0 b;
  quantize_row_q4_0(x, &b, 32);
  EXPECT_EQ(b.d, fp32_to_fp16(-1.0f));
  EXPECT_EQ(b.qs[3] & 15, 0);
  EXPECT_EQ(b.qs[5] & 15, 15);
  EXPECT_EQ(b.qs[0] & 15, 8);  // zeros sit on nibble 8
  EXPECT_EQ(b.qs[4] >> 4, 6);
  EXPECT_EQ(b.qs[5] >> 4, 11);
  EXPECT_EQ(b.qs[6] >> 4, 15);
  float y[32];
  dequantize_row_q4_0(&b, y, 32);
  EXPECT_EQ(y[3], 8.0f);
  EXPECT_EQ(y[5], -7.0f);  // error |d| = 1: the documented worst case
}

// Per element, with t = x/d: |x - (q-8)*d| <= |d|/2 when t <= 7.5, and
// (t - 7)*|d| (<= |d|) when t > 7.5 clips to +7; plus 8*|d - half(d)| for the
// stored scale (|q - 8| <= 8), |d - half(d)| <= max(|d| 2^-11, 2^-25).
void expect_within_bound(const std::vector<float>& x, const char* name) {
  const int64_t n = int64_t(x.size());
  std::vector<BlockQ4_0> q(size_t(n / 32));
  std::vector<float> y(x.size());
  quantize_row_q4_0(x.data(), q.data(), n);
  dequantize_row_q4_0(q.data(), y.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) {
    float amax = 0, max = 0;
    for (int i = 0; i < 32; ++i) {
      const float v = x[size_t(b * 32 + i)];
      if (std::fabs(v) > amax) amax = std::fabs(v), max = v;
    }
    const double d = max / -8.0;
    const double stored_slack = 8 * std::fmax(std::fabs(d) * 0x1p-11, 0x1p-25);
    for (int i = 0; i < 32; ++i) {
      const size_t k = size_t(b * 32 + i);
      const double t = d != 0 ? x[k] / d : 0;
      const double rounding = t > 7.5 ? (t - 7) * std::fabs(d) : std::fabs(d) / 2;
      const double bound = rounding + std::fabs(d) * 1e-5 + stored_slack;  // + f32 rounding
      ASSERT_LE(std::fabs(double(x[k]) - y[k]), bound) << name << " element " << k;
    }
  }
}

TEST(Q4_0, RoundTripErrorWithinDerivedBound) {
  expect_within_bound(testing::gaussian(4096, 1), "gaussian");
  expect_within_bound(testing::gaussian(4096, 2, 3e3f), "large");
  for (const auto& data : testing::awkward_inputs(1024))
    expect_within_bound(data.values, data.name);
  const std::vector<float> x = testing::gaussian(4096, 1);
  std::vector<BlockQ4_0> q(4096 / 32);
  std::vector<float> y(4096);
  quantize_row_q4_0(x.data(), q.data(), 4096);
  dequantize_row_q4_0(q.data(), y.data(), 4096);
  // Step |d| = amax/8 ~ 2.1 sigma/8 for 32 Gaussians; uniform error step/sqrt(12) ~ 0.08 sigma.
  EXPECT_LT(testing::relative_rmse(x, y), 0.12);
  EXPECT_GT(testing::relative_rmse(x, y), 0.04);
}

}  // namespace
}  // namespace kvforge
