// The bf16 KV record (core/formats/kv_bf16.h): 8 significant bits, f32 range.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/formats/kv_format.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

TEST(KvFormatBf16, RelativeErrorPerElementAtMostTwoToMinus8) {
  auto x = testing::gaussian(128, 4, 5.0f);
  x[3] = 1e30f;  // beyond f16's range, fine in bf16
  std::vector<uint8_t> rec(kv_head_bytes(KvDtype::BF16, 128));
  kv_encode_head(KvDtype::BF16, x.data(), rec.data(), 128);
  std::vector<float> y(128);
  kv_decode_head(KvDtype::BF16, rec.data(), y.data(), 128);
  for (size_t i = 0; i < 128; ++i)
    EXPECT_LE(std::fabs(y[i] - x[i]), std::fabs(x[i]) * 0x1p-8f) << i;
  EXPECT_TRUE(std::isfinite(y[3]));
}

}  // namespace
}  // namespace kvforge
