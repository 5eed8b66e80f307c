#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/cpu_features.h"
#include "core/formats/f16.h"
#include "formats_test_util.h"
#include "simd_levels.h"

namespace kvforge {
namespace {

using testing::bits_float;
using testing::float_bits;

bool is_nan_half(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

// The value of a half from the IEEE 754 definition, computed in double.
double half_value(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  double v = exponent == 0 ? std::ldexp(double(mantissa), -24)
                           : std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
  if (exponent == 31) v = mantissa ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  return sign ? -v : v;
}

TEST(F16, KnownValues) {
  EXPECT_EQ(float_bits(fp16_to_fp32(0x0000)), float_bits(0.0f));
  EXPECT_EQ(float_bits(fp16_to_fp32(0x8000)), float_bits(-0.0f));
  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0400), 0x1p-14f);
  EXPECT_EQ(fp16_to_fp32(0x0001), 0x1p-24f);
  EXPECT_EQ(fp16_to_fp32(0x03ff), 1023 * 0x1p-24f);
  EXPECT_EQ(fp16_to_fp32(0x3555), 0.333251953125f);
  EXPECT_EQ(fp16_to_fp32(0x7c00), INFINITY);
  EXPECT_EQ(fp16_to_fp32(0xfc00), -INFINITY);
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));

  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65519.99f), 0x7bff);  // just below the halfway point to 2^16
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);   // the tie goes to the even "2^16" = inf
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);  // halfway to the smallest subnormal: even is 0
  EXPECT_EQ(fp32_to_fp16(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(fp32_to_fp16(0x3p-25f), 0x0002);  // 1.5 * 2^-24 ties to the even 2 * 2^-24
  EXPECT_EQ(fp32_to_fp16(0x1p-30f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0x1p-24f), 0x8001);
  EXPECT_EQ(fp32_to_fp16(0x1.ff8p-15f), 0x03ff);  // largest subnormal, 1023 * 2^-24
  EXPECT_EQ(fp32_to_fp16(0x1.ffcp-15f), 0x0400);  // ties (to even) into the smallest normal
  EXPECT_EQ(fp32_to_fp16(1.0f / 3.0f), 0x3555);
}

TEST(F16, EveryHalfDecodesToItsIeeeValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_fp32(uint16_t(h));
    const double want = half_value(uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(float_bits(f) >> 31, h >> 15) << std::hex << h;
    } else {
      ASSERT_EQ(double(f), want) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h >> 15) != 0) << std::hex << h;
    }
  }
}

TEST(F16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = fp32_to_fp16(fp16_to_fp32(uint16_t(h)));
    if (is_nan_half(uint16_t(h))) {
      // NaN payload rule: sign and payload kept, quiet bit set.
      ASSERT_EQ(back, h | 0x0200) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

// For every pair of neighbouring positive finite halves (a, b): values just
// below their midpoint go to a, just above go to b, and the midpoint itself
// goes to the one with an even mantissa. Covers subnormals, the
// subnormal/normal boundary, every binade and the overflow edge to inf.
TEST(F16, RoundsToNearestEvenEverywhere) {
  for (uint32_t a = 0; a < 0x7c00; ++a) {
    const uint32_t b = a + 1;  // 0x7c00 (inf) follows 65504: the overflow rule
    const double lo = half_value(uint16_t(a));
    const double hi = b == 0x7c00 ? 65536.0 : half_value(uint16_t(b));
    const float mid = float((lo + hi) / 2);  // exact: needs at most 12 significant bits
    ASSERT_EQ(double(mid), (lo + hi) / 2);
    const uint16_t even = (a & 1) ? uint16_t(b) : uint16_t(a);
    ASSERT_EQ(fp32_to_fp16(mid), even) << std::hex << a;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, 0.0f)), a) << std::hex << a;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, INFINITY)), b) << std::hex << a;
    ASSERT_EQ(fp32_to_fp16(-std::nextafter(mid, INFINITY)), b | 0x8000) << std::hex << a;
  }
}

TEST(F16, NanStaysNanAndKeepsTopPayload) {
  EXPECT_EQ(fp32_to_fp16(bits_float(0x7f800001)), 0x7e00);  // low payload lost, still NaN
  EXPECT_EQ(fp32_to_fp16(bits_float(0xffc00000)), 0xfe00);
  EXPECT_EQ(fp32_to_fp16(bits_float(0x7fbfe000)), 0x7fff);  // signalling, payload 0x1ff
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()) & 0x7e00, 0x7e00);
}

TEST(F16, RowFunctionsConvertEveryElement) {
  const std::vector<float> x = testing::gaussian(37, 3, 100.0f);
  std::vector<uint16_t> h(x.size());
  std::vector<float> back(x.size());
  quantize_row_f16(x.data(), h.data(), int64_t(x.size()));
  dequantize_row_f16(h.data(), back.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(h[i], fp32_to_fp16(x[i]));
    EXPECT_LE(std::fabs(back[i] - x[i]), std::fabs(x[i]) * 0x1p-11f) << i;
  }
}

// Every level's row functions against the element-wise scalar conversion, on
// lengths around the 8-wide step and bit patterns that include NaN, infinity,
// subnormals and halfway cases.
TEST(F16, RowFunctionsAgreeAtEverySimdLevel) {
  testing::SimdLevelGuard guard;
  std::mt19937 rng(7);
  for (SimdLevel level : testing::available_simd_levels()) {
    set_simd_level(level);
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 37, 256, 1000}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) {
        uint32_t u = rng();
        if (u & 1) u = (u & 0x807fffffu) | ((100 + (u >> 24) % 50) << 23);
        v = bits_float(u);
      }
      std::vector<uint16_t> h(size_t(n) + 1, 0xabcd);
      quantize_row_f16(x.data(), h.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(h[size_t(i)], fp32_to_fp16(x[size_t(i)]))
            << simd_level_name(level) << " n " << n << " i " << i;
      ASSERT_EQ(h[size_t(n)], 0xabcd) << "wrote past the row";

      std::vector<uint16_t> halves(static_cast<size_t>(n));
      for (uint16_t& v : halves) v = uint16_t(rng());
      std::vector<float> f(size_t(n) + 1, -1.0f);
      dequantize_row_f16(halves.data(), f.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const float want = fp16_to_fp32(halves[size_t(i)]);
        if (std::isnan(want))
          ASSERT_TRUE(std::isnan(f[size_t(i)])) << simd_level_name(level) << " i " << i;
        else
          ASSERT_EQ(float_bits(f[size_t(i)]), float_bits(want))
              << simd_level_name(level) << " n " << n << " i " << i;
      }
      ASSERT_EQ(f[size_t(n)], -1.0f) << "wrote past the row";
    }
  }
}

// The SIMD kernels convert with F16C; this pins the scalar code to the same answers.
__attribute__((target("f16c"))) uint16_t hw_fp32_to_fp16(float f) {
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hw_fp16_to_fp32(uint16_t h) { return _cvtsh_ss(h); }

TEST(F16, MatchesF16cInstructions) {
  if (!cpu_features().f16c) GTEST_SKIP() << "no F16C on this machine";
  for (uint32_t h = 0; h < 65536; ++h) {
    if (is_nan_half(uint16_t(h))) continue;
    ASSERT_EQ(float_bits(fp16_to_fp32(uint16_t(h))), float_bits(hw_fp16_to_fp32(uint16_t(h))));
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 2'000'000; ++i) {
    // Random bit patterns cover NaNs and infinities; the scaled ones favour the half range.
    uint32_t u = rng();
    if (i & 1) u = (u & 0x807fffffu) | ((100 + (u >> 24) % 50) << 23);
    const float f = bits_float(u);
    ASSERT_EQ(fp32_to_fp16(f), hw_fp32_to_fp16(f)) << std::hex << u;
  }
}

}  // namespace
}  // namespace kvforge
