// Every strict prefix of a valid GGUF file is rejected with a GgufError (and,
// under ASan/UBSan, without touching a byte past the end).
#include <gtest/gtest.h>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "gguf_sample.h"

namespace kvforge::gguf {
namespace {

// The sample file cut right after its last tensor's bytes, so that no
// trailing padding could make a truncated prefix still valid.
std::vector<uint8_t> sample_without_trailing_padding(uint32_t version, uint64_t alignment) {
  std::vector<uint8_t> bytes = testing::make_sample_bytes(version, alignment);
  const GgufFile f = GgufFile::from_bytes(bytes);
  uint64_t end = 0;
  for (const TensorInfo& t : f.tensors())
    end = std::max(end, f.data_offset() + t.offset + t.n_bytes);
  bytes.resize(end);
  return bytes;
}

void expect_every_prefix_rejected(const std::vector<uint8_t>& bytes) {
  ASSERT_NO_THROW(GgufFile::from_bytes(bytes)) << "the untruncated file must be valid";
  size_t rejected = 0;
  for (size_t size = 0; size < bytes.size(); ++size) {
    try {
      GgufFile::from_bytes(std::span(bytes.data(), size), "cut.gguf");
      ADD_FAILURE() << "prefix of " << size << " of " << bytes.size() << " bytes was accepted";
    } catch (const GgufError& e) {
      ASSERT_EQ(std::string(e.what()).rfind("cut.gguf: ", 0), 0u) << e.what();
      ++rejected;
    }
  }
  EXPECT_EQ(rejected, bytes.size());
}

TEST(GgufTruncation, EveryPrefixOfAFileWithTensorsThrows) {
  expect_every_prefix_rejected(sample_without_trailing_padding(3, 32));
}

TEST(GgufTruncation, EveryPrefixOfAVersion2FileWithOddAlignmentThrows) {
  expect_every_prefix_rejected(sample_without_trailing_padding(2, 8));
}

TEST(GgufTruncation, EveryPrefixOfAMetadataOnlyFileThrows) {
  GgufWriter w;
  testing::add_sample_metadata(w);
  expect_every_prefix_rejected(w.to_bytes());
}

TEST(GgufTruncation, MessagesSayWhatWasCut) {
  const std::vector<uint8_t> bytes = sample_without_trailing_padding(3, 32);
  const GgufFile f = GgufFile::from_bytes(bytes);
  auto message_at = [&](size_t size) -> std::string {
    try {
      GgufFile::from_bytes(std::span(bytes.data(), size), "cut.gguf");
    } catch (const GgufError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message_at(0).find("too small"), std::string::npos) << message_at(0);
  EXPECT_NE(message_at(10).find("truncated reading tensor_count"), std::string::npos);
  // Cut inside the last tensor's data: the message names it and the file size.
  const TensorInfo& last = f.tensors().back();
  const std::string m = message_at(bytes.size() - 1);
  EXPECT_NE(m.find("tensor '" + last.name + "'"), std::string::npos) << m;
  EXPECT_NE(m.find("extends past end of file (size " + std::to_string(bytes.size() - 1) + ")"),
            std::string::npos)
      << m;
  // Cut inside the tensor infos: the message names the tensor being read.
  const std::string info_cut = message_at(f.data_offset() - 40);
  EXPECT_NE(info_cut.find("tensor"), std::string::npos) << info_cut;
}

}  // namespace
}  // namespace kvforge::gguf
