// GgufWriter → GgufFile → GgufWriter: values, order, tensors and bytes survive.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "gguf_sample.h"
#include "testdata.h"

namespace kvforge::gguf {
namespace {

using testing::make_sample_bytes;
using testing::make_sample_writer;
using testing::sample_tensor_bytes;
using testing::sample_tensor_n_bytes;
using testing::sample_tensors;

class GgufRoundTrip : public ::testing::TestWithParam<std::tuple<uint32_t, uint64_t>> {};

TEST_P(GgufRoundTrip, MetadataTensorsAndBytes) {
  const auto [version, alignment] = GetParam();
  const GgufWriter w = make_sample_writer(version, alignment);
  const std::vector<uint8_t> bytes = w.to_bytes();
  const GgufFile f = GgufFile::from_bytes(bytes, "sample.gguf");

  EXPECT_EQ(f.version(), version);
  EXPECT_EQ(f.alignment(), alignment);
  EXPECT_EQ(f.file_size(), bytes.size());
  EXPECT_EQ(f.data_offset() % alignment, 0u);
  EXPECT_EQ(f.metadata(), w.metadata());
  EXPECT_EQ(f.metadata().size(), 27u + (alignment != kDefaultAlignment ? 1 : 0));
  if (alignment != kDefaultAlignment) {
    EXPECT_EQ(f.metadata().front().key, "general.alignment");
    EXPECT_EQ(f.get_u32("general.alignment"), alignment);
  } else {
    EXPECT_FALSE(f.has("general.alignment"));
  }

  const auto expected = sample_tensors();
  ASSERT_EQ(f.tensors().size(), expected.size());
  uint64_t previous_end = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    EXPECT_EQ(t.name, expected[i].name);
    EXPECT_EQ(t.type, expected[i].type);
    EXPECT_EQ(t.dims, expected[i].dims);
    EXPECT_EQ(t.n_bytes, sample_tensor_n_bytes(expected[i]));
    EXPECT_EQ(t.offset % alignment, 0u) << t.name;
    EXPECT_GE(t.offset, previous_end) << t.name;
    EXPECT_LT(t.offset - previous_end, alignment) << "padding between tensors is minimal";
    previous_end = t.offset + t.n_bytes;
    EXPECT_EQ(f.find_tensor(t.name), &t);
    const auto data = f.tensor_data(t);
    const auto want = sample_tensor_bytes(i, t.n_bytes);
    ASSERT_EQ(data.size(), want.size());
    EXPECT_EQ(0, std::memcmp(data.data(), want.data(), want.size())) << t.name;
  }
  // The last tensor is padded too, so the file ends aligned.
  EXPECT_EQ(bytes.size() % alignment, 0u);

  // Reading and writing back reproduces the file byte for byte.
  EXPECT_EQ(GgufWriter::from_file(f).to_bytes(), bytes);
}

INSTANTIATE_TEST_SUITE_P(VersionsAndAlignments, GgufRoundTrip,
                         ::testing::Combine(::testing::Values(2u, 3u),
                                            ::testing::Values(uint64_t{1}, uint64_t{8},
                                                              uint64_t{32}, uint64_t{4096})));

TEST(GgufRoundTrip, TypedValues) {
  const GgufFile f = GgufFile::from_bytes(make_sample_bytes());
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_string("general.name"), "");
  EXPECT_EQ(f.get_u32("test.u8"), 250u);
  EXPECT_EQ(f.get_i64("test.i8"), -100);
  EXPECT_EQ(f.get_u32("test.u16"), 65000u);
  EXPECT_EQ(f.get_i64("test.i16"), -32000);
  EXPECT_EQ(f.get_u32("test.u32"), 4000000000u);
  EXPECT_EQ(f.get_i64("test.i32"), -2000000000);
  EXPECT_EQ(f.get_u64("test.u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f.get_i64("test.i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.get_f32("test.f32"), -1.5e-7f);
  EXPECT_FLOAT_EQ(f.get_f32("test.f64"), 3.14159265f);
  EXPECT_TRUE(f.get_bool("test.bool_true"));
  EXPECT_FALSE(f.get_bool("test.bool_false"));
  EXPECT_EQ(f.get_string("test.utf8"), "h\xC3\xA9llo \xE2\x96\x81world");
  EXPECT_EQ(f.find("test.u8")->type, ValueType::UINT8);
  EXPECT_EQ(f.find("test.i64")->type, ValueType::INT64);
  EXPECT_EQ(f.find("test.f64")->type, ValueType::FLOAT64);

  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens"),
            (std::vector<std::string>{"<unk>", "<s>", "</s>", "", "\xE2\x96\x81the"}));
  EXPECT_EQ(f.get_f32_array("tokenizer.ggml.scores"),
            (std::vector<float>{0.0f, -1.0f, -2.5f, 0.0f, -3.25f}));
  EXPECT_EQ(f.get_i32_array("tokenizer.ggml.token_type"), (std::vector<int32_t>{2, 3, 3, 1, 1}));
  EXPECT_TRUE(f.get_string_array("test.empty_string_array").empty());
  EXPECT_TRUE(f.get_i32_array("test.empty_u32_array").empty());
  // Integer arrays of other widths convert when every value fits.
  EXPECT_EQ(f.get_i32_array("test.u8_array"), (std::vector<int32_t>{0, 255}));

  const Value* nested = f.find("test.nested_strings");
  ASSERT_NE(nested, nullptr);
  const Array& outer = std::get<Array>(nested->data);
  EXPECT_EQ(outer.element_type, ValueType::ARRAY);
  ASSERT_EQ(outer.items.size(), 3u);
  const Array& first = std::get<Array>(outer.items[0].data);
  EXPECT_EQ(first.element_type, ValueType::STRING);
  ASSERT_EQ(first.items.size(), 3u);
  EXPECT_EQ(std::get<std::string>(first.items[2].data), "bc");
  EXPECT_TRUE(std::get<Array>(outer.items[1].data).items.empty());

  const Array& level1 = std::get<Array>(f.find("test.nested3")->data);
  const Array& level2 = std::get<Array>(level1.items.at(0).data);
  const Array& level3 = std::get<Array>(level2.items.at(0).data);
  EXPECT_EQ(level3.element_type, ValueType::INT16);
  EXPECT_EQ(std::get<int64_t>(level3.items.at(0).data), -7);
}

TEST(GgufRoundTrip, WriteToPathMatchesToBytesAndOpens) {
  const GgufWriter w = make_sample_writer(3, 64);
  const auto path = std::filesystem::temp_directory_path() /
                    ("kvforge_gguf_roundtrip_" + std::to_string(::getpid()) + ".gguf");
  w.write(path);
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
  EXPECT_EQ(on_disk, w.to_bytes());
  {
    const GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.name(), path.string());
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(GgufWriter::from_file(f).to_bytes(), on_disk);
  }
  std::filesystem::remove(path);
}

TEST(GgufRoundTrip, MetadataOnlyFileHasNoPadding) {
  GgufWriter w;
  w.set("general.architecture", Value::string("llama"));
  const std::vector<uint8_t> bytes = w.to_bytes();
  // 24-byte header + key (8 + 20) + type (4) + value (8 + 5), no padding.
  EXPECT_EQ(bytes.size(), 24u + 8 + 20 + 4 + 8 + 5);
  const GgufFile f = GgufFile::from_bytes(bytes);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(GgufWriter::from_file(f).to_bytes(), bytes);
}

TEST(GgufRoundTrip, EmptyFileHasOnlyAHeader) {
  const std::vector<uint8_t> bytes = GgufWriter(2).to_bytes();
  EXPECT_EQ(bytes.size(), 24u);
  const GgufFile f = GgufFile::from_bytes(bytes);
  EXPECT_EQ(f.version(), 2u);
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_TRUE(f.tensors().empty());
}

TEST(GgufRoundTrip, SettingAKeyAgainReplacesItInPlace) {
  GgufWriter w;
  w.set("a", Value::u32(1));
  w.set("b", Value::u32(2));
  w.set("a", Value::string("one"));
  const GgufFile f = GgufFile::from_bytes(w.to_bytes());
  ASSERT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata()[0].key, "a");
  EXPECT_EQ(f.get_string("a"), "one");
  EXPECT_EQ(f.metadata()[1].key, "b");
}

TEST(GgufRoundTrip, SettingAlignmentKeyChangesPadding) {
  GgufWriter w;
  w.set("general.alignment", Value::u32(128));
  EXPECT_EQ(w.alignment(), 128u);
  w.add_tensor("a", GgmlType::F32, {3}, std::vector<uint8_t>(12, 1));
  w.add_tensor("b", GgmlType::F32, {1}, std::vector<uint8_t>(4, 2));
  const GgufFile f = GgufFile::from_bytes(w.to_bytes());
  EXPECT_EQ(f.alignment(), 128u);
  EXPECT_EQ(f.data_offset() % 128, 0u);
  EXPECT_EQ(f.find_tensor("b")->offset, 128u);
  EXPECT_EQ(f.file_size(), f.data_offset() + 256);
}

// The fuzzer's committed seeds (fuzz/corpus/gguf, from fuzz/make_gguf_corpus.cpp)
// must stay valid, or fuzzing starts from rejected inputs only.
TEST(GgufRoundTrip, SeedCorpusFilesAreValidAndRewriteIdentically) {
  const auto dir = kvforge::testing::source_dir() / "fuzz" / "corpus" / "gguf";
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const GgufFile f = GgufFile::open(entry.path());
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    EXPECT_EQ(GgufWriter::from_file(f).to_bytes(), bytes) << entry.path();
    ++n;
  }
  EXPECT_GE(n, 4u);
}

}  // namespace
}  // namespace kvforge::gguf
