// ByteWriter's encoding read back by ByteReader field for field; every short
// read reaches the handler with the field, offset and bytes needed vs left,
// before any byte past the end is touched.
#include "core/byte_codec.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace kvforge {
namespace {

std::vector<uint8_t> sample_encoding() {
  ByteWriter w;
  w.put(uint8_t(7));
  w.put(uint32_t(0x01020304));
  w.put(-2.5f);
  w.zeros(3);
  const std::string name = "layer.0";
  w.sized_bytes(name.data(), name.size());
  w.bytes("xyz", 3);
  return w.take();
}

TEST(ByteCodec, WriterLaysOutLittleEndianFieldsBackToBack) {
  const std::vector<uint8_t> b = sample_encoding();
  ASSERT_EQ(b.size(), 1u + 4 + 4 + 3 + 8 + 7 + 3);
  EXPECT_EQ(b[0], 7);
  EXPECT_EQ(b[1], 0x04);
  EXPECT_EQ(b[4], 0x01);
  EXPECT_EQ(b[9], 0);
  EXPECT_EQ(b[11], 0);
  EXPECT_EQ(b[12], 7);  // the u64 length of "layer.0"
  EXPECT_EQ(b[13], 0);
  EXPECT_EQ(char(b[20]), 'l');
  EXPECT_EQ(char(b.back()), 'z');
}

TEST(ByteCodec, ReaderReturnsWhatTheWriterWrote) {
  const std::vector<uint8_t> b = sample_encoding();
  ByteReader r(b);
  EXPECT_EQ(r.get<uint8_t>("a"), 7);
  EXPECT_EQ(r.get<uint32_t>("b"), 0x01020304u);
  EXPECT_EQ(r.get<float>("c"), -2.5f);
  r.skip(3, "reserved");
  const std::span<const uint8_t> name = r.sized_bytes("name");
  EXPECT_EQ(std::string(name.begin(), name.end()), "layer.0");
  EXPECT_EQ(r.offset(), b.size() - 3);
  EXPECT_EQ(r.string(3, "tail"), "xyz");
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(ByteCodec, WriterAppendsToAPrefix) {
  ByteWriter w(std::vector<uint8_t>{1, 2});
  w.put(uint16_t(0x0403));
  EXPECT_EQ(w.take(), (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST(ByteCodec, ShortReadReachesTheHandlerWithItsFacts) {
  const std::vector<uint8_t> b = {1, 2, 3, 4, 5};
  ShortRead seen;
  std::string what;
  ByteReader r(b, [&](const ShortRead& s) {
    seen = s;
    what = std::string(s.what);
    throw std::runtime_error("short");
  });
  r.get<uint16_t>("head");
  EXPECT_THROW(r.get<uint64_t>("count"), std::runtime_error);
  EXPECT_EQ(what, "count");
  EXPECT_EQ(seen.offset, 2u);
  EXPECT_EQ(seen.needed, 8u);
  EXPECT_EQ(seen.left, 3u);
  // A failed read consumes nothing.
  EXPECT_EQ(r.offset(), 2u);
  EXPECT_EQ(r.get<uint8_t>("next"), 3);
}

TEST(ByteCodec, LengthPrefixLargerThanTheRestIsAShortRead) {
  ByteWriter w;
  w.put(uint64_t(1) << 62);  // a hostile length
  w.bytes("ab", 2);
  const std::vector<uint8_t> b = w.take();
  ByteReader r(b);
  try {
    r.sized_bytes("prompt");
    FAIL() << "no error";
  } catch (const std::out_of_range& e) {
    EXPECT_EQ(std::string(e.what()), "prompt needs 4611686018427387904 bytes at offset 8, 2 left");
  }
}

TEST(ByteCodec, NeedChecksWithoutConsuming) {
  const std::vector<uint8_t> b(10);
  ByteReader r(b);
  r.need(10, "all");
  EXPECT_EQ(r.offset(), 0u);
  EXPECT_THROW(r.need(11, "more"), std::out_of_range);
  EXPECT_THROW(r.skip(11, "more"), std::out_of_range);
  EXPECT_EQ(r.bytes(10, "all").size(), 10u);
  EXPECT_THROW(r.get<uint8_t>("past"), std::out_of_range);
}

}  // namespace
}  // namespace kvforge
