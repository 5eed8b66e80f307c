#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/formats/f16.h"
#include "core/formats/q5_0.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

TEST(Q5_0, BlockLayout) {
  EXPECT_EQ(sizeof(BlockQ5_0), 22u);
  EXPECT_EQ(offsetof(BlockQ5_0, d), 0u);
  EXPECT_EQ(offsetof(BlockQ5_0, qh), 2u);
  EXPECT_EQ(offsetof(BlockQ5_0, qs), 6u);
}

// Packs quants q[0..31] (each in [0, 31]) by the layout of q5_0.h, byte by byte.
BlockQ5_0 pack(uint16_t d, const int (&q)[32]) {
  uint8_t bytes[22] = {};
  bytes[0] = uint8_t(d & 0xff);
  bytes[1] = uint8_t(d >> 8);
  for (int e = 0; e < 32; ++e) {
    if (q[e] & 16) bytes[2 + e / 8] |= uint8_t(1 << (e % 8));  // h, little endian
    if (e < 16) {
      bytes[6 + e] |= uint8_t(q[e] & 15);
    } else {
      bytes[6 + e - 16] |= uint8_t((q[e] & 15) << 4);
    }
  }
  BlockQ5_0 b;
  std::memcpy(&b, bytes, sizeof(b));
  return b;
}

// Three blocks: q = e (every level -16..15 once; the 5th bit clear in the
// low-nibble half, set in the high one), q = 31 - e (the reverse), and a
// scrambled permutation (13e + 5 mod 32) mixing set and clear bits in every
// byte of h; positive and negative scales.
TEST(Q5_0, DequantizesHandPackedBlocks) {
  int up[32], down[32], mixed[32];
  for (int e = 0; e < 32; ++e) {
    up[e] = e;
    down[e] = 31 - e;
    mixed[e] = (13 * e + 5) % 32;
  }
  const BlockQ5_0 blocks[3] = {pack(0x3555, up), pack(0xb800, down), pack(0x2c00, mixed)};
  const float scales[3] = {0.333251953125f, -0.5f, 0.0625f};
  const int* quants[3] = {up, down, mixed};
  float out[96];
  dequantize_row_q5_0(blocks, out, 96);
  for (int b = 0; b < 3; ++b)
    for (int e = 0; e < 32; ++e)
      EXPECT_EQ(out[32 * b + e], float(quants[b][e] - 16) * scales[b]) << b << " " << e;
  // A few by hand: level -16 and +15 at d = 0.333251953125; -0.5 * (31 - 16).
  EXPECT_EQ(out[0], -5.33203125f);
  EXPECT_EQ(out[31], 4.998779296875f);
  EXPECT_EQ(out[32], -7.5f);
  EXPECT_EQ(out[63], 8.0f);
  EXPECT_EQ(out[64 + 1], 0.125f);  // mixed[1] = 18: (18 - 16) * 0.0625
}

// The 5th bit of each element sits at bit e of h, independent of the others.
TEST(Q5_0, EachHighBitMovesOnlyItsElement) {
  int zero[32] = {};
  for (int e = 0; e < 32; ++e) {
    int q[32] = {};
    q[e] = 16;
    const BlockQ5_0 b = pack(0x3c00, q);  // d = 1
    float out[32];
    dequantize_row_q5_0(&b, out, 32);
    for (int i = 0; i < 32; ++i) ASSERT_EQ(out[i], i == e ? 0.0f : -16.0f) << e << " " << i;
  }
  const BlockQ5_0 all_clear = pack(0x3c00, zero);
  EXPECT_EQ(all_clear.qh[0] | all_clear.qh[1] | all_clear.qh[2] | all_clear.qh[3], 0);
}

// The published quantizer (d = max / -16, q = min(31, trunc(x/d + 16.5)))
// and the squared error of a block as stored, both computed here.
double published_block_error(const float* x) {
  float amax = 0, max = 0;
  for (int i = 0; i < 32; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  const float d = max / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const float stored = fp16_to_fp32(fp32_to_fp16(d));
  double err = 0;
  for (int i = 0; i < 32; ++i) {
    const int q = std::min(31, int(int8_t(x[i] * id + 16.5f)));
    const double diff = double(x[i]) - double(float(q - 16) * stored);
    err += diff * diff;
  }
  return err;
}

// Per block, our squared error is at most the published quantizer's (its
// scale is one of our candidates, and nearest levels are optimal for a
// given scale); every output is finite.
void expect_no_worse_than_published(const std::vector<float>& x, const char* name) {
  const int64_t n = int64_t(x.size());
  std::vector<BlockQ5_0> q(size_t(n / 32));
  std::vector<float> y(x.size());
  quantize_row_q5_0(x.data(), q.data(), n);
  dequantize_row_q5_0(q.data(), y.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) {
    double err = 0;
    for (int i = 0; i < 32; ++i) {
      const size_t k = size_t(32 * b + i);
      ASSERT_TRUE(std::isfinite(y[k])) << name << " element " << k;
      err += (double(x[k]) - y[k]) * (double(x[k]) - y[k]);
    }
    ASSERT_LE(err, published_block_error(x.data() + 32 * b)) << name << " block " << b;
  }
}

TEST(Q5_0, QuantizesNoWorseThanThePublishedQuantizerOnEveryBlock) {
  expect_no_worse_than_published(testing::gaussian(4096, 1), "gaussian");
  expect_no_worse_than_published(testing::gaussian(4096, 2, 3e3f), "large");
  for (const auto& data : testing::awkward_inputs(1024))
    expect_no_worse_than_published(data.values, data.name);
}

TEST(Q5_0, AwkwardInputsStayExactWhereTheyCan) {
  for (const auto& data : testing::awkward_inputs(1024)) {
    std::vector<BlockQ5_0> q(1024 / 32);
    std::vector<float> y(1024);
    quantize_row_q5_0(data.values.data(), q.data(), 1024);
    dequantize_row_q5_0(q.data(), y.data(), 1024);
    const std::string name = data.name;
    if (name == "zeros" || name == "constant negative") {  // -2.5 = -16 * 0.15625, a half
      EXPECT_EQ(y, data.values) << name;
    } else if (name == "constant positive") {  // 0.37: off any level x half by < 2^-11 relative
      for (float v : y) ASSERT_NEAR(v, 0.37f, 0.37f * 0x1p-11f) << name;
    } else if (name == "single outlier") {
      EXPECT_EQ(y[1024 / 3], 50.0f) << name;  // 50 = -16 * -3.125, a half
    }
  }
}

// The largest |x| of 32 Gaussians is ~2.35 sigma, so the published step
// |d| = amax/16 is ~0.147 sigma and its uniform rounding error |d|/sqrt(12)
// ~0.042 sigma, which a better-fitted scale only lowers (and no block is
// worse than the published one's, above).
TEST(Q5_0, RoundTripRelativeRmseOfGaussianWeights) {
  const std::vector<float> x = testing::gaussian(1 << 14, 3);
  std::vector<BlockQ5_0> q(x.size() / 32);
  std::vector<float> y(x.size());
  quantize_row_q5_0(x.data(), q.data(), int64_t(x.size()));
  dequantize_row_q5_0(q.data(), y.data(), int64_t(x.size()));
  EXPECT_LT(testing::relative_rmse(x, y), 0.042);
  EXPECT_GT(testing::relative_rmse(x, y), 0.03);
}

}  // namespace
}  // namespace kvforge
