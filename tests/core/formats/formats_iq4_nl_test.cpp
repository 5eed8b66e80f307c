#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/formats/f16.h"
#include "core/formats/iq4_codebook.h"
#include "core/formats/iq4_nl.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

TEST(IQ4_NL, BlockLayout) {
  EXPECT_EQ(sizeof(BlockIQ4_NL), 18u);
  EXPECT_EQ(offsetof(BlockIQ4_NL, d), 0u);
  EXPECT_EQ(offsetof(BlockIQ4_NL, qs), 2u);
}

TEST(IQ4_NL, CodebookIsThePublishedOne) {
  const int8_t published[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                1,    13,   25,  38,  53,  69,  89,  113};
  EXPECT_EQ(0, std::memcmp(kIq4Codebook, published, 16));
}

// Packs indices idx[0..31] (each in [0, 15]) by the layout of iq4_nl.h.
BlockIQ4_NL pack(uint16_t d, const int (&idx)[32]) {
  uint8_t bytes[18] = {};
  bytes[0] = uint8_t(d & 0xff);
  bytes[1] = uint8_t(d >> 8);
  for (int j = 0; j < 16; ++j) bytes[2 + j] = uint8_t(idx[j] | idx[j + 16] << 4);
  BlockIQ4_NL b;
  std::memcpy(&b, bytes, sizeof(b));
  return b;
}

// Every codebook entry in the low nibbles (element j: index j) and in the
// high ones (element j + 16: index 15 - j), at a positive and a negative
// scale; values written out by hand for d = 0.5 and d = -0.25.
TEST(IQ4_NL, DequantizesHandPackedBlocks) {
  int idx[32];
  for (int j = 0; j < 16; ++j) idx[j] = j, idx[j + 16] = 15 - j;
  const BlockIQ4_NL blocks[2] = {pack(0x3800, idx), pack(0xb400, idx)};  // 0.5, -0.25
  const float half_levels[16] = {-63.5f, -52.0f, -41.5f, -32.5f, -24.5f, -17.5f, -11.0f, -5.0f,
                                 0.5f,   6.5f,   12.5f,  19.0f,  26.5f,  34.5f,  44.5f,  56.5f};
  float out[64];
  dequantize_row_iq4_nl(blocks, out, 64);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], half_levels[j]) << j;
    EXPECT_EQ(out[16 + j], half_levels[15 - j]) << j;
    EXPECT_EQ(out[32 + j], -half_levels[j] / 2) << j;  // exact: halving
    EXPECT_EQ(out[48 + j], -half_levels[15 - j] / 2) << j;
  }
}

// A non-round scale: d * level in f32, one rounding.
TEST(IQ4_NL, DequantizesWithOneF32Multiply) {
  int idx[32];
  for (int e = 0; e < 32; ++e) idx[e] = (7 * e + 3) % 16;
  const BlockIQ4_NL b = pack(0x3555, idx);  // 0.333251953125
  float out[32];
  dequantize_row_iq4_nl(&b, out, 32);
  for (int e = 0; e < 32; ++e)
    EXPECT_EQ(out[e], 0.333251953125f * float(kIq4Codebook[idx[e]])) << e;
}

double block_error(const float* x, const float* y) {
  double err = 0;
  for (int i = 0; i < 32; ++i) err += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  return err;
}

// The squared error of the simplest encoding: d = max / -127 as a half and
// every element on the level nearest to it (searched here over all 16).
double max_on_lowest_level_error(const float* x) {
  float amax = 0, max = 0;
  for (int i = 0; i < 32; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  const float d = fp16_to_fp32(fp32_to_fp16(max / -127.0f));
  double err = 0;
  for (int i = 0; i < 32; ++i) {
    double best = INFINITY;
    for (int l = 0; l < 16; ++l)
      best = std::fmin(best, std::fabs(double(x[i]) - double(d * float(kIq4Codebook[l]))));
    err += best * best;
  }
  return err;
}

// That encoding is the quantizer's first candidate, so no block comes out
// worse (up to the rounding of the two sums); every output is finite.
void expect_no_worse_than_max_on_lowest_level(const std::vector<float>& x, const char* name) {
  const int64_t n = int64_t(x.size());
  std::vector<BlockIQ4_NL> q(size_t(n / 32));
  std::vector<float> y(x.size());
  quantize_row_iq4_nl(x.data(), q.data(), n);
  dequantize_row_iq4_nl(q.data(), y.data(), n);
  for (int64_t b = 0; b < n / 32; ++b) {
    for (int i = 0; i < 32; ++i)
      ASSERT_TRUE(std::isfinite(y[size_t(32 * b + i)])) << name << " element " << 32 * b + i;
    const double simple = max_on_lowest_level_error(x.data() + 32 * b);
    ASSERT_LE(block_error(x.data() + 32 * b, y.data() + 32 * b), simple * (1 + 1e-9))
        << name << " block " << b;
  }
}

TEST(IQ4_NL, QuantizesNoWorseThanItsFirstCandidateOnEveryBlock) {
  expect_no_worse_than_max_on_lowest_level(testing::gaussian(4096, 1), "gaussian");
  expect_no_worse_than_max_on_lowest_level(testing::gaussian(4096, 2, 3e3f), "large");
  for (const auto& data : testing::awkward_inputs(1024))
    expect_no_worse_than_max_on_lowest_level(data.values, data.name);
}

TEST(IQ4_NL, AwkwardInputsStayExactWhereTheyCan) {
  for (const auto& data : testing::awkward_inputs(1024)) {
    std::vector<BlockIQ4_NL> q(1024 / 32);
    std::vector<float> y(1024);
    quantize_row_iq4_nl(data.values.data(), q.data(), 1024);
    dequantize_row_iq4_nl(q.data(), y.data(), 1024);
    const std::string name = data.name;
    if (name == "zeros") {
      EXPECT_EQ(y, data.values) << name;
    } else if (name.starts_with("constant")) {  // one level x a half: within 2^-11 relative
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], data.values[i], std::fabs(data.values[i]) * 0x1p-11f) << name;
    }
  }
}

// The published reference quantizer without importance weights (ggml's
// quantize_row_iq4_nl_ref): d = max / -127, nearest levels for that d, then
// d refit by least squares weighted by x^2. Our quantizer, which picks the
// best of several scales by unweighted squared error, must do better in
// total on Gaussian weights.
double published_total_error(const std::vector<float>& x) {
  double total = 0;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* xb = x.data() + 32 * b;
    float amax = 0, max = 0;
    for (int i = 0; i < 32; ++i)
      if (std::fabs(xb[i]) > amax) amax = std::fabs(xb[i]), max = xb[i];
    const float id = -127.0f / max;
    float sum_qx = 0, sum_q2 = 0;
    int idx[32];
    for (int i = 0; i < 32; ++i) {
      float best = INFINITY;
      for (int l = 0; l < 16; ++l) {
        const float dist = std::fabs(id * xb[i] - float(kIq4Codebook[l]));
        if (dist < best) best = dist, idx[i] = l;
      }
      const float q = kIq4Codebook[idx[i]], w = xb[i] * xb[i];
      sum_qx += w * q * xb[i];
      sum_q2 += w * q * q;
    }
    const float d = fp16_to_fp32(fp32_to_fp16(sum_qx / sum_q2));
    for (int i = 0; i < 32; ++i) {
      const double diff = double(xb[i]) - double(d * float(kIq4Codebook[idx[i]]));
      total += diff * diff;
    }
  }
  return total;
}

// The largest |x| of 32 Gaussians is ~2.35 sigma; on level -127 it makes
// |d| ~0.0185 sigma. The levels are 11-13 apart around zero, where most
// values fall (0.20-0.24 sigma: uniform rounding error gap/sqrt(12) ~0.06-0.07
// sigma), up to 24 in the tails: bound 0.08. A 4-bit uniform grid (Q4_0)
// would have steps of ~0.29 sigma.
TEST(IQ4_NL, RoundTripRelativeRmseOfGaussianWeights) {
  const std::vector<float> x = testing::gaussian(1 << 14, 3);
  std::vector<BlockIQ4_NL> q(x.size() / 32);
  std::vector<float> y(x.size());
  quantize_row_iq4_nl(x.data(), q.data(), int64_t(x.size()));
  dequantize_row_iq4_nl(q.data(), y.data(), int64_t(x.size()));
  const double rmse = testing::relative_rmse(x, y);
  EXPECT_LT(rmse, 0.08);
  EXPECT_GT(rmse, 0.04);
  double sig = 0;
  for (float v : x) sig += double(v) * v;
  EXPECT_LT(rmse, std::sqrt(published_total_error(x) / sig));
}

}  // namespace
}  // namespace kvforge
