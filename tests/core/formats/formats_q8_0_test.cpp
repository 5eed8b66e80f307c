#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>

#include "core/formats/f16.h"
#include "core/formats/q8_0.h"
#include "formats_test_util.h"

namespace kvforge {
namespace formats_q8_0_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

TEST(Q8_0, BlockLayout) {
  EXPECT_EQ(offsetof(BlockQ8_0, d), 0u);
  EXPECT_EQ(offsetof(BlockQ8_0, qs), 2u);
}

TEST(Q8_0, DequantizesHandBuiltBlocks) {
  BlockQ8_0 blocks[2];
  blocks[0].d = 0x3555;  // 0.333251953125: not a power of two, so products round
  blocks[1].d = 0xb800;  // -0.5
  for (int i = 0; i < 32; ++i) {
    blocks[0].qs[i] = int8_t(i * 8 - 128);  // -128 .. 120
    blocks[1].qs[i] = int8_t(127 - i);
  }
  float out[64];
  dequantize_row_q8_0(blocks, out, 64);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(out[i], float(i * 8 - 128) * 0.333251953125f) << i;
    EXPECT_EQ(out[32 + i], float(127 - i) * -0.5f) << i;
  }
}

// The published quantizer: d = amax/127 stored as half, q = roundf(x / d).
TEST(Q8_0, QuantizesAsPublished) {
  float x[32] = {};
  x[0] = -127.0f;  // amax 127 -> d = 1 exactly
  x[1] = 2.5f;     // ties round away from zero (roundf), not to even
  x[2] = -2.5f;
  x[3] = 126.49f;
  x[4] = 0.5f;
  BlockQ8_0 b;
  quantize_row_q8_0(x, &b, 32);
  EXPECT_EQ(b.d, 0x3c00);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 3);
  EXPECT_EQ(b.qs[2], -3);
  EXPECT_EQ(b.qs[3], 126);
  EXPECT_EQ(b.qs[4], 1);
  EXPECT_EQ(b.qs[5], 0);

  const float zeros[32] = {};
  quantize_row_q8_0(zeros, &b, 32);
  EXPECT_EQ(b.d, 0);
  for (int8_t q : b.qs) EXPECT_EQ(q, 0);
}

// |x - q*half(d)| <= |x - q*d| + |q|*|d - half(d)| <= d/2 + 127*|d - half(d)|,
// with |d - half(d)| <= max(d * 2^-11, 2^-25) (half rounding: 11 significant
// bits in the normal range, absolute step 2^-24 among subnormals). f32
// rounding of x * (1/d) and of q * d adds at most ~127 * 3 * 2^-24 * d < 5e-5 d.
void expect_within_bound(const std::vector<float>& x, const char* name) {
  const int64_t n = int64_t(x.size());
  std::vector<BlockQ8_0> q(size_t(n / 32));
  std::vector<float> y(x.size());
  quantize_row_q8_0(x.data(), q.data(), n);
  dequantize_row_q8_0(q.data(), y.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[size_t(b * 32 + i)]));
    const double d = amax / 127.0;
    const double bound = d * (0.5 + 5e-5) + 127 * std::fmax(d * 0x1p-11, 0x1p-25);
    for (int i = 0; i < 32; ++i) {
      const size_t k = size_t(b * 32 + i);
      ASSERT_LE(std::fabs(double(x[k]) - y[k]), bound) << name << " element " << k;
    }
  }
}

TEST(Q8_0, RoundTripErrorWithinDerivedBound) {
  expect_within_bound(testing::gaussian(4096, 1), "gaussian");
  expect_within_bound(testing::gaussian(4096, 2, 3e4f), "large");
  for (const auto& data : testing::awkward_inputs(1024))
    expect_within_bound(data.values, data.name);
  // The bound is tight: Gaussian data uses up a good part of it somewhere.
  const std::vector<float> x = testing::gaussian(4096, 1);
  std::vector<BlockQ8_0> q(4096 / 32);
  std::vector<float> y(4096);
  quantize_row_q8_0(x.data(), q.data(), 4096);
  dequantize_row_q8_0(q.data(), y.data(), 4096);
  EXPECT_LT(testing::relative_rmse(x, y), 0.01);
  EXPECT_GT(testing::relative_rmse(x, y), 0.001);
}

}  // namespace formats_q8_0_test
}  // namespace kvforge
