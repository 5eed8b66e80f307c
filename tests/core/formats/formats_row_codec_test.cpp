#include <gtest/gtest.h>

#include <cstring>

#include "core/formats/bf16.h"
#include "core/formats/f16.h"
#include "core/formats/iq4_nl.h"
#include "core/formats/iq4_xs.h"
#include "core/formats/mxfp4.h"
#include "core/formats/q2_k.h"
#include "core/formats/q3_k.h"
#include "core/formats/q4_0.h"
#include "core/formats/q4_1.h"
#include "core/formats/q4_k.h"
#include "core/formats/q5_0.h"
#include "core/formats/q5_1.h"
#include "core/formats/q5_k.h"
#include "core/formats/q6_k.h"
#include "core/formats/q8_0.h"
#include "core/formats/row_codec.h"
#include "formats_test_util.h"

namespace kvforge {
namespace {

const GgmlType kCodecTypes[] = {
    GgmlType::F32,    GgmlType::F16,  GgmlType::BF16,   GgmlType::Q8_0,
    GgmlType::Q4_0,   GgmlType::Q4_1, GgmlType::Q5_0,   GgmlType::Q5_1,
    GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K,   GgmlType::Q4_K,
    GgmlType::Q5_K,   GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::MXFP4};

TEST(RowCodec, SupportedTypes) {
  for (GgmlType t : kCodecTypes) {
    EXPECT_TRUE(is_supported_weight_type(t)) << type_name(t);
    EXPECT_TRUE(is_quantizable_type(t)) << type_name(t);
  }
  for (GgmlType t :
       {GgmlType::Q8_1, GgmlType::IQ2_XXS, GgmlType::Q8_K, GgmlType::I8, GgmlType::IQ1_S}) {
    EXPECT_FALSE(is_supported_weight_type(t)) << type_name(t);
    EXPECT_FALSE(is_quantizable_type(t)) << type_name(t);
  }
}

// The switchboard must route to each format's own functions: compare bytes
// and floats against direct calls.
TEST(RowCodec, DispatchesToEachFormat) {
  const int64_t n = 512;
  const std::vector<float> x = testing::gaussian(size_t(n), 21);
  for (GgmlType t : kCodecTypes) {
    const size_t bytes = row_bytes(t, size_t(n));
    std::vector<uint8_t> via_codec(bytes), direct(bytes);
    quantize_row(t, x.data(), via_codec.data(), n);
    std::vector<float> y(static_cast<size_t>(n)), y_direct(static_cast<size_t>(n));
    dequantize_row(t, via_codec.data(), y.data(), n);
    switch (t) {
      case GgmlType::F32:
        std::memcpy(direct.data(), x.data(), bytes);
        std::memcpy(y_direct.data(), x.data(), bytes);
        break;
      case GgmlType::F16:
        quantize_row_f16(x.data(), reinterpret_cast<uint16_t*>(direct.data()), n);
        dequantize_row_f16(reinterpret_cast<uint16_t*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::BF16:
        quantize_row_bf16(x.data(), reinterpret_cast<uint16_t*>(direct.data()), n);
        dequantize_row_bf16(reinterpret_cast<uint16_t*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q8_0:
        quantize_row_q8_0(x.data(), reinterpret_cast<BlockQ8_0*>(direct.data()), n);
        dequantize_row_q8_0(reinterpret_cast<BlockQ8_0*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q4_0:
        quantize_row_q4_0(x.data(), reinterpret_cast<BlockQ4_0*>(direct.data()), n);
        dequantize_row_q4_0(reinterpret_cast<BlockQ4_0*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q2_K:
        quantize_row_q2_k(x.data(), reinterpret_cast<BlockQ2_K*>(direct.data()), n);
        dequantize_row_q2_k(reinterpret_cast<BlockQ2_K*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q3_K:
        quantize_row_q3_k(x.data(), reinterpret_cast<BlockQ3_K*>(direct.data()), n);
        dequantize_row_q3_k(reinterpret_cast<BlockQ3_K*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q4_1:
        quantize_row_q4_1(x.data(), reinterpret_cast<BlockQ4_1*>(direct.data()), n);
        dequantize_row_q4_1(reinterpret_cast<BlockQ4_1*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q5_1:
        quantize_row_q5_1(x.data(), reinterpret_cast<BlockQ5_1*>(direct.data()), n);
        dequantize_row_q5_1(reinterpret_cast<BlockQ5_1*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q4_K:
        quantize_row_q4_k(x.data(), reinterpret_cast<BlockQ4_K*>(direct.data()), n);
        dequantize_row_q4_k(reinterpret_cast<BlockQ4_K*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q5_K:
        quantize_row_q5_k(x.data(), reinterpret_cast<BlockQ5_K*>(direct.data()), n);
        dequantize_row_q5_k(reinterpret_cast<BlockQ5_K*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q6_K:
        quantize_row_q6_k(x.data(), reinterpret_cast<BlockQ6_K*>(direct.data()), n);
        dequantize_row_q6_k(reinterpret_cast<BlockQ6_K*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::IQ4_XS:
        quantize_row_iq4_xs(x.data(), reinterpret_cast<BlockIQ4_XS*>(direct.data()), n);
        dequantize_row_iq4_xs(reinterpret_cast<BlockIQ4_XS*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::Q5_0:
        quantize_row_q5_0(x.data(), reinterpret_cast<BlockQ5_0*>(direct.data()), n);
        dequantize_row_q5_0(reinterpret_cast<BlockQ5_0*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::IQ4_NL:
        quantize_row_iq4_nl(x.data(), reinterpret_cast<BlockIQ4_NL*>(direct.data()), n);
        dequantize_row_iq4_nl(reinterpret_cast<BlockIQ4_NL*>(direct.data()), y_direct.data(), n);
        break;
      case GgmlType::MXFP4:
        quantize_row_mxfp4(x.data(), reinterpret_cast<BlockMXFP4*>(direct.data()), n);
        dequantize_row_mxfp4(reinterpret_cast<BlockMXFP4*>(direct.data()), y_direct.data(), n);
        break;
      default:
        FAIL();
    }
    EXPECT_EQ(via_codec, direct) << type_name(t);
    EXPECT_EQ(y, y_direct) << type_name(t);
  }
}

TEST(RowCodec, RejectsBadRowsWithContext) {
  std::vector<uint8_t> buf(4096);
  std::vector<float> f(1024);
  try {
    dequantize_row(GgmlType::Q4_K, buf.data(), f.data(), 300);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("q4_k"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("300"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
  EXPECT_THROW(quantize_row(GgmlType::Q8_0, f.data(), buf.data(), 33), std::invalid_argument);
  EXPECT_THROW(dequantize_row(GgmlType::IQ2_XXS, buf.data(), f.data(), 256), std::invalid_argument);
  EXPECT_THROW(quantize_row(GgmlType::IQ3_XXS, f.data(), buf.data(), 256), std::invalid_argument);
  EXPECT_NO_THROW(dequantize_row(GgmlType::F16, buf.data(), f.data(), 7));  // no block structure
}

}  // namespace
}  // namespace kvforge
