#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/formats/q4_k.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

// Sub-block scales and mins chosen so that every 6-bit field has a distinct
// value and the sub-blocks 4..7 use both of their high bits.
constexpr uint8_t kScales[8] = {1, 17, 33, 63, 5, 22, 47, 60};
constexpr uint8_t kMins[8] = {2, 13, 40, 63, 9, 31, 50, 58};
// Packed by hand from the layout in q4_k.h:
//   bytes 0-3  = sc[0..3] | (sc[4..7] >> 4) << 6:  1|0<<6, 17|1<<6, 33|2<<6, 63|3<<6
//   bytes 4-7  = m[0..3]  | (m[4..7] >> 4) << 6:   2|0<<6, 13|1<<6, 40|3<<6, 63|3<<6
//   bytes 8-11 = (sc[4..7] & 15) | (m[4..7] & 15) << 4: 5|9<<4, 6|15<<4, 15|2<<4, 12|10<<4
constexpr uint8_t kPackedScales[12] = {0x01, 0x51, 0xa1, 0xff, 0x02, 0x4d,
                                       0xe8, 0xff, 0x95, 0xf6, 0x2f, 0xac};
constexpr float kD = 0.333251953125f;      // half 0x3555
constexpr float kDmin = 0.0999755859375f;  // half 0x2e66

int nibble_of(int e) { return (e * 7 + 3) % 16; }

BlockQ4_K hand_built_block() {
  BlockQ4_K b;
  b.d = 0x3555;
  b.dmin = 0x2e66;
  std::memcpy(b.scales, kPackedScales, 12);
  // Element 64g + l is the low nibble of qs[32g + l], 64g + 32 + l the high one.
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      b.qs[32 * g + l] = uint8_t(nibble_of(64 * g + l) | nibble_of(64 * g + 32 + l) << 4);
    }
  }
  return b;
}

TEST(Q4_K, BlockLayout) {
  EXPECT_EQ(offsetof(BlockQ4_K, d), 0u);
  EXPECT_EQ(offsetof(BlockQ4_K, dmin), 2u);
  EXPECT_EQ(offsetof(BlockQ4_K, scales), 4u);
  EXPECT_EQ(offsetof(BlockQ4_K, qs), 16u);
}

TEST(Q4_K, UnpacksAllEightScalesAndMins) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, m = 0;
    q4_k_scale_min(kPackedScales, j, sc, m);
    EXPECT_EQ(sc, kScales[j]) << "sub-block " << j;
    EXPECT_EQ(m, kMins[j]) << "sub-block " << j;
  }
}

// x = (d * sc[j]) * q - (dmin * m[j]), each product rounded to f32 on its own.
TEST(Q4_K, DequantizesHandBuiltBlockBitExactly) {
  BlockQ4_K blocks[2] = {hand_built_block(), hand_built_block()};
  blocks[1].d = 0xc000;  // -2: the second block must use its own super-scales
  blocks[1].dmin = 0x3c00;
  float out[512];
  dequantize_row_q4_k(blocks, out, 512);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    const float step = kD * float(kScales[j]);
    const float min = kDmin * float(kMins[j]);
    const float want = step * float(nibble_of(e)) - min;
    ASSERT_EQ(testing::float_bits(out[e]), testing::float_bits(want)) << "element " << e;
    const float step2 = -2.0f * float(kScales[j]);
    const float want2 = step2 * float(nibble_of(e)) - float(kMins[j]);
    ASSERT_EQ(out[256 + e], want2) << "second block, element " << e;
  }
}

// Measured 0.0708-0.0711 over seeds. A plain min-max quantizer (step
// (max-min)/15 over 32 Gaussians, range ~4.1 sigma) would give
// step/sqrt(12) ~ 0.079; the least-squares search must beat that. No scalar
// 4.5-bit code can go below the rate-distortion bound 2^-4.5 = 0.044.
TEST(Q4_K, GaussianRelativeRmse) {
  for (uint32_t seed : {1u, 2u}) {
    const std::vector<float> x = testing::gaussian(256 * 512, seed);
    const double rmse = testing::relative_rmse(x, testing::round_trip(GgmlType::Q4_K, x));
    EXPECT_LT(rmse, 0.074) << "seed " << seed;
    EXPECT_GT(rmse, 0.044) << "seed " << seed;
  }
}

TEST(Q4_K, AwkwardInputs) {
  for (const auto& data : testing::awkward_inputs(4096)) {
    const std::vector<float>& x = data.values;
    const std::vector<float> y = testing::round_trip(GgmlType::Q4_K, x);
    for (float v : y) ASSERT_TRUE(std::isfinite(v)) << data.name;
    const double rmse = testing::relative_rmse(x, y);
    const std::string name = data.name;
    if (name == "zeros") {
      for (float v : y) ASSERT_EQ(v, 0.0f);
    } else if (name.starts_with("constant")) {
      EXPECT_LT(rmse, 1e-3) << name;  // the min (or scale) alone represents it, up to 6+11 bits
    } else if (name == "single outlier") {
      EXPECT_LT(rmse, 0.02) << name;  // the outlier's sub-block suffers, the others do not
    } else if (name.starts_with("below half range")) {
      // Scales under the half-float range flush to zero: the output is zero, error = |x|.
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 0.0f) << name;
    } else {
      EXPECT_LT(rmse, 0.074) << name;
    }
  }
}

TEST(Q4_K, ScalesOfVeryDifferentSubBlocks) {
  // Sub-block j has amplitude 2^-j: small scales get few 6-bit levels, which
  // the neighbour search must handle without blowing up the small blocks' error.
  std::vector<float> x = testing::gaussian(256, 11);
  for (int i = 0; i < 256; ++i) x[size_t(i)] *= std::ldexp(1.0f, -(i / 32));
  const std::vector<float> y = testing::round_trip(GgmlType::Q4_K, x);
  for (int j = 0; j < 8; ++j) {
    const std::vector<float> xs(x.begin() + 32 * j, x.begin() + 32 * j + 32);
    const std::vector<float> ys(y.begin() + 32 * j, y.begin() + 32 * j + 32);
    EXPECT_LT(testing::relative_rmse(xs, ys), j < 5 ? 0.12 : 0.6) << "sub-block " << j;
  }
}

TEST(Q4_K, RejectsNonFiniteInput) {
  std::vector<float> x(256, 1.0f);
  x[255] = NAN;
  BlockQ4_K b;
  EXPECT_THROW(quantize_row_q4_k(x.data(), &b, 256), std::invalid_argument);
}

}  // namespace
}  // namespace kvforge
