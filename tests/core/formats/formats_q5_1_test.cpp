#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "affine_formats_test_util.h"
#include "core/formats/f16.h"
#include "core/formats/q5_1.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

TEST(Q5_1, BlockLayout) {
  EXPECT_EQ(sizeof(BlockQ5_1), 24u);
  EXPECT_EQ(offsetof(BlockQ5_1, d), 0u);
  EXPECT_EQ(offsetof(BlockQ5_1, m), 2u);
  EXPECT_EQ(offsetof(BlockQ5_1, qh), 4u);
  EXPECT_EQ(offsetof(BlockQ5_1, qs), 8u);
}

BlockQ5_1 hand_packed(uint16_t d, uint16_t m, const uint8_t (&qh)[4], const uint8_t (&qs)[16]) {
  BlockQ5_1 b;
  b.d = d;
  b.m = m;
  std::memcpy(b.qh, qh, 4);
  std::memcpy(b.qs, qs, 16);
  return b;
}

// Levels 0..31 in order: nibble byte i = i | i << 4 (elements i and i + 16
// share their low 4 bits), 5th bit clear for elements 0-15 and set for 16-31
// (qh bytes 2 and 3). Reversed (31 - j): every nibble byte 0xff - 0x11 i,
// 5th bit set for 0-15 (qh bytes 0 and 1), clear for 16-31. Together every
// element position has its 5th bit both set and clear, and every level appears
// at every position class (low/high nibble, qh byte 0-3).
const uint8_t kAscendingQs[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                  0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
const uint8_t kDescendingQs[16] = {0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88,
                                   0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00};

// d = 0.25, m = -4 (exact): x = q/4 - 4.
TEST(Q5_1, DequantizesEveryLevelWithTheFifthBitSetAndClear) {
  const BlockQ5_1 blocks[2] = {
      hand_packed(0x3400, 0xc400, {0x00, 0x00, 0xff, 0xff}, kAscendingQs),
      hand_packed(0x3400, 0xc400, {0xff, 0xff, 0x00, 0x00}, kDescendingQs)};
  float out[64];
  dequantize_row_q5_1(blocks, out, 64);
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(out[j], float(j) * 0.25f - 4.0f) << j;
    EXPECT_EQ(out[32 + j], float(31 - j) * 0.25f - 4.0f) << j;
  }
  EXPECT_EQ(out[0], -4.0f);
  EXPECT_EQ(out[31], 3.75f);
}

// The 5th bits alone, in an irregular pattern: qh = 96 0f c3 a5, all nibbles
// zero, so element j is 16 exactly where bit j % 8 of qh[j / 8] is set:
//   0x96 = 1001 0110: elements 1, 2, 4, 7;   0x0f: 8-11;
//   0xc3 = 1100 0011: 16, 17, 22, 23;        0xa5 = 1010 0101: 24, 26, 29, 31.
// Negative step, positive offset: d = -0.5, m = 3, so 16 decodes to -5.
TEST(Q5_1, FifthBitsFollowTheLittleEndianBitOrder) {
  const uint8_t zeros[16] = {};
  const BlockQ5_1 b = hand_packed(0xb800, 0x4200, {0x96, 0x0f, 0xc3, 0xa5}, zeros);
  const int set[] = {1, 2, 4, 7, 8, 9, 10, 11, 16, 17, 22, 23, 24, 26, 29, 31};
  float want[32];
  for (float& v : want) v = 3.0f;
  for (int j : set) want[j] = -5.0f;
  float out[32];
  dequantize_row_q5_1(&b, out, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(out[j], want[j]) << j;
}

// A half step times a level <= 31 has at most 16 significant bits, so the
// product is exact in f32 and only the sum rounds: once, to nearest even,
// whether or not a compiler fuses it. With an offset of +-60000 (f32 ulp
// 2^-8) and d = 0.333251953125 (2730 x 2^-13) the sums are inexact; the
// expected values are the exact sums (in double) rounded once.
TEST(Q5_1, DequantizesRoundingTheExactSumOnce) {
  const uint16_t steps[] = {0x3555, 0xb555};    // +-0.333251953125
  const uint16_t offsets[] = {0x7b53, 0xfb53};  // +-60000
  int inexact = 0;
  for (uint16_t d : steps) {
    for (uint16_t m : offsets) {
      const BlockQ5_1 b = hand_packed(d, m, {0x00, 0x00, 0xff, 0xff}, kAscendingQs);
      float out[32];
      dequantize_row_q5_1(&b, out, 32);
      const double df = (d & 0x8000 ? -1 : 1) * 0.333251953125,
                   mf = (m & 0x8000 ? -1 : 1) * 60000.0;
      for (int i = 0; i < 32; ++i) {
        const int q = i;
        const double exact = double(q) * df + mf;
        EXPECT_EQ(out[i], float(exact)) << d << " " << m << " " << i;
        inexact += double(float(exact)) != exact;
      }
    }
  }
  EXPECT_GT(inexact, 64);
}

// Every level written by the quantizer reads back: 32 values on a grid of
// step 0.5 from -3 (all halves, so the block is exact), shuffled.
TEST(Q5_1, QuantizesAGridExactly) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = -3.0f + 0.5f * float((j * 7 + 5) % 32);
  BlockQ5_1 b;
  quantize_row_q5_1(x, &b, 32);
  float y[32];
  dequantize_row_q5_1(&b, y, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[j]) << j;
  EXPECT_EQ(fp16_to_fp32(b.d), 0.5f);
  EXPECT_EQ(fp16_to_fp32(b.m), -3.0f);
}

// Per block, the decoded error is at most the published quantizer's (which
// meets its derived bound), so every block stays within that bound too.
void expect_q5_1_within_published(const std::vector<float>& x, const char* name) {
  const int64_t n = int64_t(x.size());
  std::vector<BlockQ5_1> q(size_t(n / 32));
  std::vector<float> y(x.size());
  quantize_row_q5_1(x.data(), q.data(), n);
  dequantize_row_q5_1(q.data(), y.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x.data() + 32 * b;
    float published[32];
    testing::published_affine_block(xb, 31, published);
    const double ours = testing::block_squared_error(xb, y.data() + 32 * b);
    const double theirs = testing::block_squared_error(xb, published);
    const double bound = testing::published_affine_bound(xb, 31);
    for (int i = 0; i < 32; ++i) {
      ASSERT_TRUE(std::isfinite(y[size_t(32 * b + i)])) << name << " element " << 32 * b + i;
      ASSERT_LE(std::fabs(double(xb[i]) - published[i]), bound) << name << " published " << i;
    }
    ASSERT_LE(ours, theirs * (1 + 1e-6) + 1e-30) << name << " block " << b;
    ASSERT_LE(std::sqrt(ours / 32), bound) << name << " block " << b;
  }
}

TEST(Q5_1, RoundTripNeverWorseThanThePublishedQuantizer) {
  expect_q5_1_within_published(testing::gaussian(4096, 1), "gaussian");
  expect_q5_1_within_published(testing::gaussian(4096, 2, 3e3f), "large");
  for (const auto& data : testing::awkward_inputs(1024))
    expect_q5_1_within_published(data.values, data.name);
}

// 32 Gaussians span about 4.1 sigma (twice the expected maximum, 2.04): the
// published step is ~4.1/31 = 0.13 sigma, uniform rounding error
// step/sqrt(12) ~ 0.038 sigma. The refitted step and offset must beat it.
TEST(Q5_1, GaussianRelativeErrorBelowThePublishedQuantizers) {
  const std::vector<float> x = testing::gaussian(1 << 14, 3);
  std::vector<BlockQ5_1> q(x.size() / 32);
  std::vector<float> y(x.size()), published(x.size());
  quantize_row_q5_1(x.data(), q.data(), int64_t(x.size()));
  dequantize_row_q5_1(q.data(), y.data(), int64_t(x.size()));
  for (size_t b = 0; b < x.size() / 32; ++b)
    testing::published_affine_block(x.data() + 32 * b, 31, published.data() + 32 * b);
  const double ours = testing::relative_rmse(x, y), theirs = testing::relative_rmse(x, published);
  EXPECT_GT(theirs, 0.034);
  EXPECT_LT(theirs, 0.042);
  EXPECT_LT(ours, 0.92 * theirs);
}

}  // namespace
}  // namespace kvforge
