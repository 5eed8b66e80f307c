// Properties every KV record format shares: names, sizes, self-contained records.
#include "core/formats/kv_format.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "formats_test_util.h"

namespace kvforge {
namespace {

TEST(KvFormat, NamesRoundTrip) {
  for (KvDtype t : kAllKvDtypes) {
    const auto back = kv_dtype_from_name(kv_dtype_name(t));
    ASSERT_TRUE(back.has_value()) << kv_dtype_name(t);
    EXPECT_EQ(*back, t);
    EXPECT_NE(std::string(kv_dtype_names()).find(kv_dtype_name(t)), std::string::npos);
  }
  EXPECT_FALSE(kv_dtype_from_name("q8").has_value());
}

TEST(KvFormat, RecordBytes) {
  for (int hd : {32, 64, 128}) {
    EXPECT_EQ(kv_head_bytes(KvDtype::F32, hd), size_t(hd) * 4);
    EXPECT_EQ(kv_head_bytes(KvDtype::F16, hd), size_t(hd) * 2);
    EXPECT_EQ(kv_head_bytes(KvDtype::BF16, hd), size_t(hd) * 2);
    EXPECT_EQ(kv_head_bytes(KvDtype::Int8, hd), size_t(hd) + 2);
    EXPECT_EQ(kv_head_bytes(KvDtype::Q4, hd), size_t(hd / 32) * 20);
  }
  // The int8 budget: at most 0.53× f16 including the scale for head_dim 64 and 128.
  for (int hd : {64, 128})
    EXPECT_LE(double(kv_head_bytes(KvDtype::Int8, hd)) / double(kv_head_bytes(KvDtype::F16, hd)),
              0.53)
        << hd;
}

TEST(KvFormat, Q4RejectsHeadDimNotMultipleOf32) {
  EXPECT_FALSE(kv_supports_head_dim(KvDtype::Q4, 48));
  EXPECT_TRUE(kv_supports_head_dim(KvDtype::Int8, 48));
  try {
    kv_head_bytes(KvDtype::Q4, 48);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("48"), std::string::npos) << e.what();
  }
}

// Encoding writes exactly kv_head_bytes and depends only on its own values;
// decoding is the inverse up to the format's error.
TEST(KvFormat, RecordsAreSelfContained) {
  const int hd = 64;
  for (KvDtype t : kAllKvDtypes) {
    const size_t bytes = kv_head_bytes(t, hd);
    const auto x = testing::gaussian(hd, 3);
    std::vector<uint8_t> buf(bytes + 16, 0xA5);
    kv_encode_head(t, x.data(), buf.data() + 8, hd);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(buf[i], 0xA5) << kv_dtype_name(t);
      EXPECT_EQ(buf[8 + bytes + i], 0xA5) << kv_dtype_name(t) << " wrote past the record";
    }
    std::vector<uint8_t> again(bytes);
    kv_encode_head(t, x.data(), again.data(), hd);
    EXPECT_EQ(0, std::memcmp(again.data(), buf.data() + 8, bytes)) << kv_dtype_name(t);
    std::vector<float> y(hd);
    kv_decode_head(t, buf.data() + 8, y.data(), hd);
    EXPECT_LT(testing::relative_rmse(x, y), 0.1) << kv_dtype_name(t);
  }
}

TEST(KvFormat, ZerosDecodeToZeros) {
  const int hd = 128;
  for (KvDtype t : kAllKvDtypes) {
    std::vector<float> x(hd, 0.0f), y(hd, 1.0f);
    std::vector<uint8_t> rec(kv_head_bytes(t, hd));
    kv_encode_head(t, x.data(), rec.data(), hd);
    kv_decode_head(t, rec.data(), y.data(), hd);
    for (float v : y) EXPECT_EQ(v, 0.0f) << kv_dtype_name(t);
  }
}

}  // namespace
}  // namespace kvforge
