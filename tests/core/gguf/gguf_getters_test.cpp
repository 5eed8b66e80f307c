// GgufFile's typed getters: conversions that are allowed, and errors that name the key.
#include <gtest/gtest.h>

#include <limits>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"

namespace kvforge::gguf {
namespace {

GgufFile file_with(const std::vector<KeyValue>& kvs) {
  GgufWriter w;
  for (const KeyValue& kv : kvs) w.set(kv.key, kv.value);
  return GgufFile::from_bytes(w.to_bytes(), "getters.gguf");
}

// Runs `fn`, expecting a GgufError whose message contains every one of `parts`.
template <class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string_view> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected GgufError";
  } catch (const GgufError& e) {
    for (std::string_view p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' lacks '" << p << "'";
    }
  }
}

TEST(GgufGetters, IntegersConvertWhenTheValueFits) {
  const GgufFile f = file_with({{"u8", Value::u8(200)},
                                {"i8", Value::i8(-5)},
                                {"i64_small", Value::i64(77)},
                                {"u64_big", Value::u64(uint64_t{1} << 40)},
                                {"i32_neg", Value::i32(-1)}});
  EXPECT_EQ(f.get_u32("u8"), 200u);
  EXPECT_EQ(f.get_u64("u8"), 200u);
  EXPECT_EQ(f.get_i64("i8"), -5);
  EXPECT_EQ(f.get_u32("i64_small"), 77u);
  EXPECT_EQ(f.get_u64("u64_big"), uint64_t{1} << 40);
  EXPECT_EQ(f.get_i64("u64_big"), int64_t{1} << 40);
  expect_error([&] { f.get_u32("u64_big"); },
               {"getters.gguf", "key 'u64_big'", "1099511627776", "uint32"});
  expect_error([&] { f.get_u32("i32_neg"); }, {"key 'i32_neg'", "-1", "uint32"});
  expect_error([&] { f.get_u64("i8"); }, {"key 'i8'", "-5"});
}

TEST(GgufGetters, WrongTypeAndMissingKeyNameTheKey) {
  const GgufFile f = file_with({{"llama.block_count", Value::string("two")},
                                {"flag", Value::u8(1)},
                                {"tokens", Value::i32_array({1, 2})}});
  expect_error([&] { f.get_u32("llama.block_count"); },
               {"getters.gguf: key 'llama.block_count': expected integer, got string"});
  expect_error([&] { f.get_bool("flag"); }, {"key 'flag'", "expected bool", "uint8"});
  expect_error([&] { f.get_f32("flag"); }, {"key 'flag'", "float"});
  expect_error([&] { f.get_string("flag"); }, {"key 'flag'", "expected string"});
  expect_error([&] { f.get_string_array("tokens"); },
               {"key 'tokens'", "expected array of string, got array of int32"});
  expect_error([&] { f.get_f32_array("tokens"); }, {"key 'tokens'", "array of int32"});
  expect_error([&] { f.get_i32_array("flag"); }, {"key 'flag'", "got uint8"});
  expect_error([&] { f.get_u32("absent.key"); }, {"key 'absent.key'", "not found"});
  // Fallbacks apply only to absent keys; a wrong type still throws.
  EXPECT_EQ(f.get_u32_or("absent.key", 9), 9u);
  EXPECT_EQ(f.get_string_or("absent.key", "x"), "x");
  EXPECT_EQ(f.get_f32_or("absent.key", 0.5f), 0.5f);
  EXPECT_TRUE(f.get_bool_or("absent.key", true));
  EXPECT_EQ(f.get_u32_or("flag", 9), 1u);
  expect_error([&] { f.get_u32_or("llama.block_count", 2); }, {"key 'llama.block_count'"});
  EXPECT_FALSE(f.has("absent.key"));
  EXPECT_EQ(f.find("absent.key"), nullptr);
}

TEST(GgufGetters, FloatsAndArrays) {
  const GgufFile f = file_with(
      {{"f64", Value::f64(0.25)},
       {"f64_huge", Value::f64(1e300)},
       {"f64_arr", Value::array(ValueType::FLOAT64, {Value::f64(1.5), Value::f64(-2.0)})},
       {"i64_arr", Value::array(ValueType::INT64, {Value::i64(5), Value::i64(int64_t{1} << 33)})},
       {"u16_arr", Value::array(ValueType::UINT16, {Value::u16(65535)})}});
  EXPECT_EQ(f.get_f32("f64"), 0.25f);
  expect_error([&] { f.get_f32("f64_huge"); }, {"key 'f64_huge'", "float32"});
  EXPECT_EQ(f.get_f32_array("f64_arr"), (std::vector<float>{1.5f, -2.0f}));
  expect_error([&] { f.get_i32_array("i64_arr"); }, {"key 'i64_arr'", "item 1", "int32"});
  EXPECT_EQ(f.get_i32_array("u16_arr"), (std::vector<int32_t>{65535}));
}

TEST(GgufGetters, TensorDataRejectsAForeignTensorInfo) {
  GgufWriter w;
  w.add_tensor("t", GgmlType::F32, {1}, std::vector<uint8_t>(4, 0));
  const GgufFile f = GgufFile::from_bytes(w.to_bytes());
  TensorInfo foreign = f.tensors()[0];
  foreign.offset = 1 << 20;
  EXPECT_THROW(f.tensor_data(foreign), GgufError);
  foreign.offset = std::numeric_limits<uint64_t>::max() - 8;
  EXPECT_THROW(f.tensor_data(foreign), GgufError);
}

TEST(GgufGetters, OpenReportsMissingFileByPath) {
  expect_error([] { GgufFile::open("/nonexistent/dir/model.gguf"); },
               {"/nonexistent/dir/model.gguf", "cannot open"});
  expect_error([] { GgufFile::open("/tmp"); }, {"/tmp", "not a regular file"});
}

}  // namespace
}  // namespace kvforge::gguf
