// MXFP4 (formats/mxfp4.h): the E8M0 scale at every exponent, and our
// quantizer against llama-quantize's bytes for rows of 48 magnitudes
// (2^-30 .. 2^17), a zero block and a 1e30 outlier. The dequantizer is held
// to gguf-py bit for bit by formats_llama_quantized_test (data/llama_quantized/mxfp4.bin).
//
// data/mxfp4/quantize.bin (little endian), cut from a qwen3moe test file
// whose blk.1.ffn_up_exps rows were scaled so, then quantized by
// `llama-quantize ... MXFP4_MOE` (gguf-py's quantize gives the same bytes):
//   char[4] 'MXQ1'; uint32 rows; uint32 cols
//   float32 source[rows][cols]; uint8 quantized[rows][cols / 32 * 17]
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/formats/mxfp4.h"
#include "core/formats/row_codec.h"
#include "testdata.h"

namespace kvforge {
namespace {

TEST(Mxfp4, ScaleIsTwoToTheExponentMinus128) {
  for (int e = 0; e < 256; ++e) EXPECT_EQ(e8m0_half(uint8_t(e)), std::ldexp(1.0f, e - 128)) << e;
}

TEST(Mxfp4, QuantizesAsLlamaQuantize) {
  std::ifstream in(testing::source_dir() / "tests/core/formats/data/mxfp4/quantize.bin",
                   std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GE(bytes.size(), 12u);
  ASSERT_EQ(0, std::memcmp(bytes.data(), "MXQ1", 4));
  uint32_t rows, cols;
  std::memcpy(&rows, bytes.data() + 4, 4);
  std::memcpy(&cols, bytes.data() + 8, 4);
  const size_t rb = row_bytes(GgmlType::MXFP4, cols);
  ASSERT_EQ(bytes.size(), 12 + size_t(rows) * cols * 4 + size_t(rows) * rb);
  std::vector<float> src(size_t(rows) * cols);
  std::memcpy(src.data(), bytes.data() + 12, src.size() * 4);
  const uint8_t* want = bytes.data() + 12 + src.size() * 4;
  std::vector<uint8_t> got(rb);
  for (uint32_t r = 0; r < rows; ++r) {
    quantize_row(GgmlType::MXFP4, src.data() + size_t(r) * cols, got.data(), cols);
    ASSERT_EQ(0, std::memcmp(got.data(), want + size_t(r) * rb, rb)) << "row " << r;
  }
}

}  // namespace
}  // namespace kvforge
