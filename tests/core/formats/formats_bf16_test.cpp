#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "core/formats/bf16.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

using testing::bits_float;
using testing::float_bits;

bool is_nan_bf16(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }

TEST(Bf16, KnownValues) {
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0xc040), -3.0f);
  EXPECT_EQ(bf16_to_fp32(0x7f80), INFINITY);
  EXPECT_EQ(bf16_to_fp32(0x0001), bits_float(0x00010000));  // subnormals are kept
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(bits_float(0x3f808000)), 0x3f80);  // tie, 0x3f80 even: stays
  EXPECT_EQ(fp32_to_bf16(bits_float(0x3f818000)), 0x3f82);  // tie, 0x3f81 odd: goes up
  EXPECT_EQ(fp32_to_bf16(bits_float(0x3f808001)), 0x3f81);  // just above the tie
  EXPECT_EQ(fp32_to_bf16(FLT_MAX), 0x7f80);                 // rounds past the largest: inf
  EXPECT_EQ(fp32_to_bf16(bits_float(0x7f7f7fff)), 0x7f7f);  // largest bf16 stays finite
  EXPECT_EQ(fp32_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(fp32_to_bf16(bits_float(0x00008000)), 0x0000);  // subnormal tie to even zero
  EXPECT_EQ(fp32_to_bf16(bits_float(0x80018000)), 0x8002);
}

TEST(Bf16, NanIsPreservedNeverInf) {
  // Truncating this payload would give 0x7f80 = inf; the quiet bit prevents it.
  EXPECT_EQ(fp32_to_bf16(bits_float(0x7f800001)), 0x7fc0);
  EXPECT_EQ(fp32_to_bf16(bits_float(0xff812345)), 0xffc1);
  EXPECT_EQ(fp32_to_bf16(bits_float(0x7fc00000)), 0x7fc0);
}

TEST(Bf16, EveryPatternDecodesAndRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_fp32(uint16_t(h));
    ASSERT_EQ(float_bits(f), h << 16);
    const uint16_t back = fp32_to_bf16(f);
    ASSERT_EQ(back, is_nan_bf16(uint16_t(h)) ? (h | 0x40) : h) << std::hex << h;
  }
}

// Between every pair of neighbouring finite bf16 values: below the midpoint
// goes down, above goes up, the midpoint goes to the even one.
TEST(Bf16, RoundsToNearestEvenEverywhere) {
  for (uint32_t a = 0; a < 0x7f80; ++a) {
    const uint32_t mid = (a << 16) | 0x8000;
    const uint16_t even = (a & 1) ? uint16_t(a + 1) : uint16_t(a);
    ASSERT_EQ(fp32_to_bf16(bits_float(mid)), even) << std::hex << a;
    ASSERT_EQ(fp32_to_bf16(bits_float(mid - 1)), a) << std::hex << a;
    ASSERT_EQ(fp32_to_bf16(bits_float(mid + 1)), a + 1) << std::hex << a;
    ASSERT_EQ(fp32_to_bf16(bits_float(mid + 1) * -1.0f), (a + 1) | 0x8000) << std::hex << a;
  }
}

TEST(Bf16, RowFunctionsConvertEveryElement) {
  const std::vector<float> x = testing::gaussian(29, 5, 1e3f);
  std::vector<uint16_t> h(x.size());
  std::vector<float> back(x.size());
  quantize_row_bf16(x.data(), h.data(), int64_t(x.size()));
  dequantize_row_bf16(h.data(), back.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(h[i], fp32_to_bf16(x[i]));
    EXPECT_LE(std::fabs(back[i] - x[i]), std::fabs(x[i]) * 0x1p-8f) << i;
  }
}

}  // namespace
}  // namespace kvforge
