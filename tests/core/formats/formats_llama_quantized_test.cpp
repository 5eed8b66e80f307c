// Our dequantizers against files that nobody on this project wrote: tensors
// quantized by llama.cpp's llama-quantize, and gguf-py's numpy dequantization
// of them, cut into fixtures by tools/quant_fixtures/make_fixture.py (layout
// there). Every fixture in tests/core/formats/data/llama_quantized must match bit for
// bit; adding a fixture for a type is how a type's layout gets checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/formats/row_codec.h"
#include "formats_test_util.h"
#include "testdata.h"

namespace kvforge {
namespace {

struct Fixture {
  GgmlType type = GgmlType::F32;
  uint32_t rows = 0, cols = 0;
  std::vector<uint8_t> raw;     // [rows][row_bytes]
  std::vector<float> expected;  // [rows][cols]
};

Fixture read_fixture(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  Fixture f;
  uint32_t header[3];
  if (bytes.size() < 16 || std::memcmp(bytes.data(), "QFIX", 4) != 0) {
    ADD_FAILURE() << path << ": not a QFIX fixture";
    return f;
  }
  std::memcpy(header, bytes.data() + 4, 12);
  f.type = GgmlType(header[0]);
  f.rows = header[1];
  f.cols = header[2];
  const size_t rb = row_bytes(f.type, f.cols);
  const size_t raw_bytes = rb * f.rows, value_bytes = size_t(f.rows) * f.cols * 4;
  if (bytes.size() != 16 + raw_bytes + value_bytes) {
    ADD_FAILURE() << path << ": " << bytes.size() << " bytes, expected "
                  << 16 + raw_bytes + value_bytes;
    return f;
  }
  f.raw.assign(bytes.begin() + 16, bytes.begin() + 16 + long(raw_bytes));
  f.expected.resize(size_t(f.rows) * f.cols);
  std::memcpy(f.expected.data(), bytes.data() + 16 + raw_bytes, value_bytes);
  return f;
}

std::vector<std::filesystem::path> fixtures() {
  std::vector<std::filesystem::path> out;
  const auto dir = testing::source_dir() / "tests/core/formats/data/llama_quantized";
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".bin") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(LlamaQuantizedFixtures, EveryFixtureDequantizesBitExactlyAsGgufPy) {
  const auto paths = fixtures();
  ASSERT_FALSE(paths.empty());
  for (const auto& path : paths) {
    SCOPED_TRACE(path.filename().string());
    const Fixture f = read_fixture(path);
    ASSERT_TRUE(is_supported_weight_type(f.type)) << "type " << type_name(f.type);
    // The fixture's name is the type's: q5_k.bin holds Q5_K rows.
    EXPECT_EQ(path.stem().string(), std::string(type_name(f.type)));
    const size_t rb = row_bytes(f.type, f.cols);
    std::vector<float> got(f.cols);
    for (uint32_t r = 0; r < f.rows; ++r) {
      dequantize_row(f.type, f.raw.data() + r * rb, got.data(), f.cols);
      for (uint32_t c = 0; c < f.cols; ++c) {
        const float want = f.expected[size_t(r) * f.cols + c];
        ASSERT_EQ(testing::float_bits(got[c]), testing::float_bits(want))
            << "row " << r << " col " << c << ": got " << got[c] << ", gguf-py " << want;
      }
    }
  }
}

}  // namespace
}  // namespace kvforge
