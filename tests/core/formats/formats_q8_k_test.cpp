#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>

#include "core/formats/q8_k.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

TEST(Q8_K, BlockLayout) {
  EXPECT_EQ(offsetof(BlockQ8_K, d), 0u);
  EXPECT_EQ(offsetof(BlockQ8_K, qs), 4u);
  EXPECT_EQ(offsetof(BlockQ8_K, bsums), 260u);
}

TEST(Q8_K, QuantizesWithinHalfAStepAndSumsEachSixteen) {
  std::vector<float> x = testing::gaussian(1024, 4, 3.0f);
  x[700] = -40.0f;  // block 2's largest magnitude is negative
  std::vector<BlockQ8_K> q(4);
  quantize_row_q8_k(x.data(), q.data(), 1024);
  for (int b = 0; b < 4; ++b) {
    // llama.cpp's convention: max is the first element of largest magnitude,
    // with its sign; d = 1 / (-127 / max), and max itself maps to -127.
    float amax = 0, max = 0;
    for (int i = 0; i < 256; ++i) {
      const float v = x[size_t(256 * b + i)];
      if (std::fabs(v) > amax) {
        amax = std::fabs(v);
        max = v;
      }
    }
    EXPECT_EQ(q[size_t(b)].d, 1.0f / (-127.0f / max)) << "block " << b;
    if (b == 2) {
      EXPECT_GT(q[size_t(b)].d, 0.0f) << "a negative max gives a positive scale";
    }
    for (int i = 0; i < 256; ++i) {
      const float v = x[size_t(256 * b + i)];
      const int qi = q[size_t(b)].qs[i];
      ASSERT_LE(std::abs(qi), 127);
      if (std::fabs(v) == amax) {
        EXPECT_EQ(qi, v == max ? -127 : 127);
      }
      ASSERT_LE(std::fabs(v - float(qi) * q[size_t(b)].d), std::fabs(q[size_t(b)].d) * 0.5001f)
          << "block " << b << " element " << i;
    }
    for (int k = 0; k < 16; ++k) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += q[size_t(b)].qs[16 * k + i];
      EXPECT_EQ(q[size_t(b)].bsums[k], sum) << "block " << b << " group " << k;
    }
  }
  std::vector<float> back(1024);
  dequantize_row_q8_k(q.data(), back.data(), 1024);
  for (size_t i = 0; i < 1024; ++i)
    EXPECT_EQ(back[i], float(q[i / 256].qs[i % 256]) * q[i / 256].d);
}

TEST(Q8_K, ZeroBlockIsAllZero) {
  const std::vector<float> x(256, 0.0f);
  BlockQ8_K q;
  quantize_row_q8_k(x.data(), &q, 256);
  EXPECT_EQ(q.d, 0.0f);
  for (int8_t v : q.qs) EXPECT_EQ(v, 0);
  for (int16_t s : q.bsums) EXPECT_EQ(s, 0);
}

}  // namespace
}  // namespace kvforge
