// Distortion of the int8 KV record (core/formats/kv_int8.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/formats/f16.h"
#include "core/formats/kv_int8.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

float record_scale(const std::vector<uint8_t>& rec) {
  uint16_t d;
  std::memcpy(&d, rec.data(), 2);
  return fp16_to_fp32(d);
}

std::vector<float> round_trip(const std::vector<float>& x,
                              std::vector<uint8_t>* rec_out = nullptr) {
  const int hd = int(x.size());
  std::vector<uint8_t> rec(kv_int8_record_bytes(hd));
  kv_int8_encode(x.data(), rec.data(), hd);
  std::vector<float> y(x.size());
  kv_int8_decode(rec.data(), y.data(), hd);
  if (rec_out) *rec_out = rec;
  return y;
}

// Every element within half a step (plus the half-rounding of the scale),
// the largest magnitude maps to ±127.
TEST(KvFormatInt8, ErrorWithinHalfStep) {
  for (int hd : {32, 64, 128, 80}) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      const auto x = testing::gaussian(size_t(hd), seed, 3.0f);
      std::vector<uint8_t> rec;
      const auto y = round_trip(x, &rec);
      const float d = record_scale(rec);
      float amax = 0;
      for (float v : x) amax = std::max(amax, std::fabs(v));
      EXPECT_NEAR(d, amax / 127.0f, amax / 127.0f * 1e-3f);
      for (int i = 0; i < hd; ++i)
        EXPECT_LE(std::fabs(x[size_t(i)] - y[size_t(i)]), d * 0.5f + amax * 1e-3f) << i;
      bool hit_extreme = false;
      for (size_t i = 2; i < rec.size(); ++i)
        hit_extreme |= int8_t(rec[i]) == 127 || int8_t(rec[i]) == -127;
      EXPECT_TRUE(hit_extreme);
      for (size_t i = 2; i < rec.size(); ++i) EXPECT_NE(int8_t(rec[i]), -128);
    }
  }
}

// Gaussian data: step amax/127 with amax ≈ 3σ gives RMS error ≈ 0.007σ.
TEST(KvFormatInt8, RelativeRmseOnGaussianHeads) {
  std::vector<float> all_x, all_y;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    const auto x = testing::gaussian(128, 100 + seed);
    const auto y = round_trip(x);
    all_x.insert(all_x.end(), x.begin(), x.end());
    all_y.insert(all_y.end(), y.begin(), y.end());
  }
  const double e = testing::relative_rmse(all_x, all_y);
  EXPECT_LT(e, 0.009);
  EXPECT_GT(e, 0.004);  // it is a real 8-bit code, not a copy
}

// One scale per token: an outlier token does not degrade another token.
TEST(KvFormatInt8, OutlierStaysInItsOwnRecord) {
  auto quiet = testing::gaussian(64, 5, 0.01f);
  auto loud = testing::gaussian(64, 6, 0.01f);
  loud[7] = 100.0f;
  const double quiet_err = testing::relative_rmse(quiet, round_trip(quiet));
  EXPECT_LT(quiet_err, 0.01);
  const auto y = round_trip(loud);
  EXPECT_NEAR(y[7], 100.0f, 0.1f);
}

TEST(KvFormatInt8, NaNIsStoredAsZeroAndDoesNotPoisonTheScale) {
  auto x = testing::gaussian(32, 9);
  x[4] = std::numeric_limits<float>::quiet_NaN();
  const auto y = round_trip(x);
  EXPECT_EQ(y[4], 0.0f);
  for (int i = 0; i < 32; ++i) {
    if (i == 4) continue;
    EXPECT_NEAR(y[size_t(i)], x[size_t(i)], 0.05f);
  }
}

}  // namespace
}  // namespace kvforge
