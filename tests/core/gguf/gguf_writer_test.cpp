// GgufWriter: exact bytes per the GGUF spec, and refusal of what the reader would reject.
#include "core/gguf/gguf_writer.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "core/gguf/gguf_file.h"
#include "gguf_raw_bytes.h"

namespace kvforge::gguf {
namespace {

using testing::RawBytes;

std::vector<uint8_t> f32_bytes(std::initializer_list<float> values) {
  RawBytes b;
  for (float v : values) b.f32(v);
  return b.bytes();
}

TEST(GgufWriter, BytesFollowTheSpec) {
  GgufWriter w;
  w.set("a", Value::u32(7));
  w.set("s", Value::string("hi"));
  w.set("arr", Value::array(ValueType::INT16, {Value::i16(-2), Value::i16(3)}));
  w.add_tensor("t", GgmlType::F32, {2}, f32_bytes({1.0f, -2.0f}));
  w.add_tensor("u", GgmlType::F16, {1}, std::vector<uint8_t>{0x00, 0x3c});

  RawBytes want;
  want.header(3, 2, 3);
  want.str("a").u32(4).u32(7);                              // UINT32
  want.str("s").u32(8).str("hi");                           // STRING
  want.str("arr").u32(9).u32(3).u64(2).u16(0xfffe).u16(3);  // ARRAY of INT16
  want.str("t").u32(1).u64(2).u32(0).u64(0);                // F32 [2] at 0
  want.str("u").u32(1).u64(1).u32(1).u64(32);               // F16 [1] at 32 (8 bytes padded)
  want.pad_to(32);
  want.f32(1.0f).f32(-2.0f).pad_to(32);
  want.u8(0x00).u8(0x3c).pad_to(32);
  EXPECT_EQ(w.to_bytes(), want.bytes());
}

TEST(GgufWriter, Version2DiffersOnlyInTheVersionField) {
  GgufWriter v2(2), v3(3);
  for (GgufWriter* w : {&v2, &v3}) {
    w->set("k", Value::boolean(true));
    w->add_tensor("t", GgmlType::I32, {1}, std::vector<uint8_t>(4, 9));
  }
  std::vector<uint8_t> a = v2.to_bytes();
  const std::vector<uint8_t> b = v3.to_bytes();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a[4], 2);
  EXPECT_EQ(b[4], 3);
  a[4] = 3;
  EXPECT_EQ(a, b);
}

TEST(GgufWriter, RejectsBadVersionAndAlignment) {
  EXPECT_THROW(GgufWriter(1), std::invalid_argument);
  EXPECT_THROW(GgufWriter(4), std::invalid_argument);
  EXPECT_THROW(GgufWriter(3, 0), std::invalid_argument);
  EXPECT_THROW(GgufWriter(3, 48), std::invalid_argument);
  EXPECT_THROW(GgufWriter(3, uint64_t{1} << 32), std::invalid_argument);
  GgufWriter w;
  EXPECT_THROW(w.set("general.alignment", Value::u32(0)), std::invalid_argument);
  EXPECT_THROW(w.set("general.alignment", Value::u32(24)), std::invalid_argument);
  EXPECT_THROW(w.set("general.alignment", Value::string("32")), std::invalid_argument);
  EXPECT_EQ(w.alignment(), 32u);
  EXPECT_TRUE(w.metadata().empty());
}

TEST(GgufWriter, RejectsValuesThatCannotBeEncoded) {
  GgufWriter w;
  EXPECT_THROW(w.set("k", Value{ValueType::UINT8, uint64_t{256}}), std::invalid_argument);
  EXPECT_THROW(w.set("k", Value{ValueType::INT8, int64_t{-129}}), std::invalid_argument);
  EXPECT_THROW(w.set("k", Value{ValueType::UINT32, std::string("x")}), std::invalid_argument);
  EXPECT_THROW(w.set("k", Value{static_cast<ValueType>(13), uint64_t{0}}), std::invalid_argument);
  // An INT32 item in a UINT32 array.
  EXPECT_THROW(w.set("k", Value::array(ValueType::UINT32, {Value::u32(1), Value::i32(2)})),
               std::invalid_argument);
  try {
    w.set("bad.key",
          Value::array(ValueType::UINT8, {Value::u8(1), Value{ValueType::UINT8, uint64_t{999}}}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("key 'bad.key'[1]"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(w.metadata().empty());
}

Value nested_arrays(int levels) {
  Value v = Value::array(ValueType::UINT8, {Value::u8(1)});
  for (int i = 1; i < levels; ++i) v = Value::array(ValueType::ARRAY, {v});
  return v;
}

TEST(GgufWriter, NestingDepthLimitMatchesTheReader) {
  GgufWriter w;
  w.set("deep", nested_arrays(kMaxArrayDepth));
  EXPECT_THROW(w.set("deeper", nested_arrays(kMaxArrayDepth + 1)), std::invalid_argument);
  const GgufFile f = GgufFile::from_bytes(w.to_bytes());
  EXPECT_EQ(*f.find("deep"), nested_arrays(kMaxArrayDepth));
}

TEST(GgufWriter, RejectsTensorsTheReaderWouldReject) {
  GgufWriter w;
  const std::vector<uint8_t> four(4);
  EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {2}, four), std::invalid_argument);  // size
  EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {}, four), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {1, 1, 1, 1, 1}, four), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {1, 0}, {}), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("t", static_cast<GgmlType>(4), {1}, four), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("t", GgmlType::Q8_0, {33}, std::vector<uint8_t>(34)),
               std::invalid_argument);  // not a whole block along dim 0
  EXPECT_THROW(w.add_tensor("t", GgmlType::I8, {uint64_t{1} << 32, uint64_t{1} << 32}, {}),
               std::invalid_argument);  // 2^64 elements
  w.add_tensor("t", GgmlType::F32, {1}, four);
  EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {1}, four), std::invalid_argument);  // duplicate
  EXPECT_NO_THROW(w.add_tensor("q", GgmlType::Q8_0, {32, 2}, std::vector<uint8_t>(68)));
}

}  // namespace
}  // namespace kvforge::gguf
