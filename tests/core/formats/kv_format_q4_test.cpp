// Distortion of the 4-bit affine KV record (core/formats/kv_q4.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/formats/f16.h"
#include "core/formats/kv_q4.h"
#include "formats_test_util.h"

namespace kvforge {
namespace kv_format_q4_test {  // named: the tests build in unity batches (tests/CMakeLists.txt)

std::vector<float> round_trip(const std::vector<float>& x,
                              std::vector<uint8_t>* rec_out = nullptr) {
  const int hd = int(x.size());
  std::vector<uint8_t> rec(kv_q4_record_bytes(hd));
  kv_q4_encode(x.data(), rec.data(), hd);
  std::vector<float> y(x.size());
  kv_q4_decode(rec.data(), y.data(), hd);
  if (rec_out) *rec_out = rec;
  return y;
}

float half_at(const std::vector<uint8_t>& rec, size_t offset) {
  uint16_t h;
  std::memcpy(&h, rec.data() + offset, 2);
  return fp16_to_fp32(h);
}

TEST(KvFormatQ4, ErrorWithinHalfStepOfItsGroup) {
  for (int hd : {32, 64, 128}) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      auto x = testing::gaussian(size_t(hd), seed, 2.0f);
      for (int i = 0; i < hd; i += 3) x[size_t(i)] += 1.5f;  // off-centre groups
      std::vector<uint8_t> rec;
      const auto y = round_trip(x, &rec);
      for (int g = 0; g < hd / 32; ++g) {
        const float d = half_at(rec, size_t(g) * 20);
        const float m = half_at(rec, size_t(g) * 20 + 2);
        float lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < 32; ++i) {
          lo = std::min(lo, x[size_t(g * 32 + i)]);
          hi = std::max(hi, x[size_t(g * 32 + i)]);
        }
        EXPECT_NEAR(m, lo, std::fabs(lo) * 1e-3f);
        EXPECT_NEAR(d, (hi - lo) / 15.0f, (hi - lo) * 1e-3f);
        for (int i = 0; i < 32; ++i) {
          const size_t k = size_t(g * 32 + i);
          EXPECT_LE(std::fabs(x[k] - y[k]), d * 0.5f + (hi - lo) * 2e-3f) << g << " " << i;
        }
      }
    }
  }
}

// 16 levels over the range of 32 Gaussian values (≈ 4σ): step ≈ 0.27σ, RMS ≈ 0.078σ.
TEST(KvFormatQ4, RelativeRmseOnGaussianHeads) {
  std::vector<float> all_x, all_y;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    const auto x = testing::gaussian(128, 300 + seed);
    const auto y = round_trip(x);
    all_x.insert(all_x.end(), x.begin(), x.end());
    all_y.insert(all_y.end(), y.begin(), y.end());
  }
  const double e = testing::relative_rmse(all_x, all_y);
  EXPECT_LT(e, 0.095);
  EXPECT_GT(e, 0.05);
}

// The offset is what the format pays two bytes for: a group living in
// [10, 11] keeps 1/15 resolution of its own range, not of [-11, 11].
TEST(KvFormatQ4, OffsetGroupsKeepTheirResolution) {
  auto x = testing::gaussian(32, 77, 0.2f);
  for (auto& v : x) v = 10.5f + std::fmax(-0.5f, std::fmin(0.5f, v));
  const auto y = round_trip(x);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(y[size_t(i)], x[size_t(i)], 1.0f / 30 + 0.01f);
}

TEST(KvFormatQ4, ValuesOnTheGridRoundTripExactly) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[size_t(i)] = -2.0f + 0.25f * float((i * 7) % 16);
  x[0] = -2.0f;
  x[1] = 1.75f;
  x[32] = -2.0f;
  x[33] = 1.75f;
  EXPECT_EQ(round_trip(x), x);
}

TEST(KvFormatQ4, ConstantGroupIsExact) {
  std::vector<float> x(32, 0.375f);
  EXPECT_EQ(round_trip(x), x);
}

TEST(KvFormatQ4, NibbleOrderIsFirstHalfLow) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[size_t(i)] = float(i % 16);  // m = 0, d = 1
  std::vector<uint8_t> rec;
  round_trip(x, &rec);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(rec[size_t(4 + i)], uint8_t(i | (i << 4)));
}

}  // namespace kv_format_q4_test
}  // namespace kvforge
