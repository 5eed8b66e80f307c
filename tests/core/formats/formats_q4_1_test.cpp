#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>

#include "affine_formats_test_util.h"
#include "core/formats/f16.h"
#include "core/formats/q4_1.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

TEST(Q4_1, BlockLayout) {
  EXPECT_EQ(sizeof(BlockQ4_1), 20u);
  EXPECT_EQ(offsetof(BlockQ4_1, d), 0u);
  EXPECT_EQ(offsetof(BlockQ4_1, m), 2u);
  EXPECT_EQ(offsetof(BlockQ4_1, qs), 4u);
}

// Byte i holds element i in its low nibble and element i + 16 in its high
// nibble: qs[i] = i | (15 - i) << 4 puts every level 0..15 in both halves.
BlockQ4_1 every_nibble_block(uint16_t d, uint16_t m) {
  BlockQ4_1 b;
  b.d = d;
  b.m = m;
  for (int i = 0; i < 16; ++i) b.qs[i] = uint8_t(i | ((15 - i) << 4));
  return b;
}

// d = 0.25, m = -1.5 (both exact, every value exact): x = q/4 - 1.5.
TEST(Q4_1, DequantizesHandPackedBlockWithExactValues) {
  const BlockQ4_1 b = every_nibble_block(0x3400, 0xbe00);
  const float want[32] = {-1.5f, -1.25f, -1.0f,  -0.75f, -0.5f,  -0.25f, 0.0f,   0.25f,
                          0.5f,  0.75f,  1.0f,   1.25f,  1.5f,   1.75f,  2.0f,   2.25f,
                          2.25f, 2.0f,   1.75f,  1.5f,   1.25f,  1.0f,   0.75f,  0.5f,
                          0.25f, 0.0f,   -0.25f, -0.5f,  -0.75f, -1.0f,  -1.25f, -1.5f};
  float out[32];
  dequantize_row_q4_1(&b, out, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], want[i]) << i;
}

// Negative step, positive offset: d = -0.5, m = 3, x = 3 - q/2.
TEST(Q4_1, DequantizesNegativeStepAndPositiveOffset) {
  const BlockQ4_1 b = every_nibble_block(0xb800, 0x4200);
  float out[32];
  dequantize_row_q4_1(&b, out, 32);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i], 3.0f - 0.5f * float(i)) << i;
    EXPECT_EQ(out[16 + i], 3.0f - 0.5f * float(15 - i)) << i;
  }
}

// A half step times a level <= 31 has at most 16 significant bits, so the
// product is exact in f32 and only the sum rounds: once, to nearest even,
// whether or not a compiler fuses it. With an offset of +-60000 (f32 ulp
// 2^-8) and d = 0.333251953125 (2730 x 2^-13) the sums are inexact; the
// expected values are the exact sums (in double) rounded once.
TEST(Q4_1, DequantizesRoundingTheExactSumOnce) {
  const uint16_t steps[] = {0x3555, 0xb555};    // +-0.333251953125
  const uint16_t offsets[] = {0x7b53, 0xfb53};  // +-60000
  int inexact = 0;
  for (uint16_t d : steps) {
    for (uint16_t m : offsets) {
      const BlockQ4_1 b = every_nibble_block(d, m);
      float out[32];
      dequantize_row_q4_1(&b, out, 32);
      const double df = (d & 0x8000 ? -1 : 1) * 0.333251953125,
                   mf = (m & 0x8000 ? -1 : 1) * 60000.0;
      for (int i = 0; i < 32; ++i) {
        const int q = i < 16 ? i : 31 - i;
        const double exact = double(q) * df + mf;
        EXPECT_EQ(out[i], float(exact)) << d << " " << m << " " << i;
        inexact += double(float(exact)) != exact;
      }
    }
  }
  EXPECT_GT(inexact, 64);
}

// Per block, the decoded error is at most the published quantizer's (which
// meets its derived bound), so every block stays within that bound too.
void expect_q4_1_within_published(const std::vector<float>& x, const char* name) {
  const int64_t n = int64_t(x.size());
  std::vector<BlockQ4_1> q(size_t(n / 32));
  std::vector<float> y(x.size());
  quantize_row_q4_1(x.data(), q.data(), n);
  dequantize_row_q4_1(q.data(), y.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x.data() + 32 * b;
    float published[32];
    testing::published_affine_block(xb, 15, published);
    const double ours = testing::block_squared_error(xb, y.data() + 32 * b);
    const double theirs = testing::block_squared_error(xb, published);
    const double bound = testing::published_affine_bound(xb, 15);
    for (int i = 0; i < 32; ++i) {
      ASSERT_TRUE(std::isfinite(y[size_t(32 * b + i)])) << name << " element " << 32 * b + i;
      ASSERT_LE(std::fabs(double(xb[i]) - published[i]), bound) << name << " published " << i;
    }
    ASSERT_LE(ours, theirs * (1 + 1e-6) + 1e-30) << name << " block " << b;
    ASSERT_LE(std::sqrt(ours / 32), bound) << name << " block " << b;
  }
}

TEST(Q4_1, RoundTripNeverWorseThanThePublishedQuantizer) {
  expect_q4_1_within_published(testing::gaussian(4096, 1), "gaussian");
  expect_q4_1_within_published(testing::gaussian(4096, 2, 3e3f), "large");
  for (const auto& data : testing::awkward_inputs(1024))
    expect_q4_1_within_published(data.values, data.name);
}

// 32 Gaussians span about 4.1 sigma (twice the expected maximum, 2.04): the
// published step is ~4.1/15 = 0.27 sigma, uniform rounding error
// step/sqrt(12) ~ 0.079 sigma. The refitted step and offset must beat it.
TEST(Q4_1, GaussianRelativeErrorBelowThePublishedQuantizers) {
  const std::vector<float> x = testing::gaussian(1 << 14, 3);
  std::vector<BlockQ4_1> q(x.size() / 32);
  std::vector<float> y(x.size()), published(x.size());
  quantize_row_q4_1(x.data(), q.data(), int64_t(x.size()));
  dequantize_row_q4_1(q.data(), y.data(), int64_t(x.size()));
  for (size_t b = 0; b < x.size() / 32; ++b)
    testing::published_affine_block(x.data() + 32 * b, 15, published.data() + 32 * b);
  const double ours = testing::relative_rmse(x, y), theirs = testing::relative_rmse(x, published);
  EXPECT_GT(theirs, 0.07);
  EXPECT_LT(theirs, 0.09);
  EXPECT_LT(ours, 0.95 * theirs);
}

// A constant block is its offset; exactly, when the constant is a half.
TEST(Q4_1, ConstantBlocks) {
  for (float c : {0.0f, 1.5f, -2.5f, 0.37f}) {
    std::vector<float> x(32, c), y(32);
    BlockQ4_1 b;
    quantize_row_q4_1(x.data(), &b, 32);
    dequantize_row_q4_1(&b, y.data(), 32);
    for (int i = 0; i < 32; ++i) EXPECT_LE(std::fabs(y[size_t(i)] - c), std::fabs(c) * 0x1p-11f);
    if (c != 0.37f) {
      EXPECT_EQ(y[0], c);
    }
  }
}

}  // namespace
}  // namespace kvforge
