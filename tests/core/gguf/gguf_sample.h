// A GGUF file exercising every metadata value type, nested and empty arrays,
// empty strings and tensors of several types and shapes; shared by the GGUF
// round-trip, truncation and corruption tests.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/gguf/gguf_value.h"
#include "core/gguf/gguf_writer.h"

namespace kvforge::gguf::testing {

struct SampleTensor {
  std::string name;
  GgmlType type;
  std::vector<uint64_t> dims;
};

// Types and shapes chosen so that block sizes (32, 256), odd byte sizes that
// need padding (F16 [3] = 6 bytes, Q4_0 [32] = 18 bytes) and 4-D tensors appear.
inline std::vector<SampleTensor> sample_tensors() {
  return {
      {"token_embd.weight", GgmlType::F32, {4, 3}},
      {"blk.0.attn_q.weight", GgmlType::Q8_0, {64, 2}},
      {"blk.0.attn_norm.weight", GgmlType::F16, {3}},
      {"blk.0.ffn_up.weight", GgmlType::Q4_K, {256, 1, 2}},
      {"blk.0.ffn_gate.weight", GgmlType::Q4_0, {32}},
      {"blk.0.mask", GgmlType::I8, {5, 3, 2, 1}},
      {"output.weight", GgmlType::BF16, {2, 2}},
  };
}

inline std::vector<Value> sample_string_items(std::vector<std::string> items) {
  std::vector<Value> v;
  for (std::string& s : items) v.push_back(Value::string(std::move(s)));
  return v;
}

inline void add_sample_metadata(GgufWriter& w) {
  w.set("general.architecture", Value::string("llama"));
  w.set("general.name", Value::string(""));  // empty string
  w.set("test.u8", Value::u8(250));
  w.set("test.i8", Value::i8(-100));
  w.set("test.u16", Value::u16(65000));
  w.set("test.i16", Value::i16(-32000));
  w.set("test.u32", Value::u32(4000000000u));
  w.set("test.i32", Value::i32(-2000000000));
  w.set("test.u64", Value::u64(std::numeric_limits<uint64_t>::max()));
  w.set("test.i64", Value::i64(std::numeric_limits<int64_t>::min()));
  w.set("test.f32", Value::f32(-1.5e-7f));
  w.set("test.f64", Value::f64(3.141592653589793));
  w.set("test.bool_true", Value::boolean(true));
  w.set("test.bool_false", Value::boolean(false));
  w.set("test.utf8", Value::string("h\xC3\xA9llo \xE2\x96\x81world"));
  w.set("llama.block_count", Value::u32(1));
  w.set("tokenizer.ggml.tokens",
        Value::string_array({"<unk>", "<s>", "</s>", "", "\xE2\x96\x81the"}));
  w.set("tokenizer.ggml.scores", Value::f32_array({0.0f, -1.0f, -2.5f, 0.0f, -3.25f}));
  w.set("tokenizer.ggml.token_type", Value::i32_array({2, 3, 3, 1, 1}));
  w.set("test.empty_u32_array", Value::array(ValueType::UINT32, {}));
  w.set("test.empty_string_array", Value::array(ValueType::STRING, {}));
  w.set("test.bool_array",
        Value::array(ValueType::BOOL, {Value::boolean(true), Value::boolean(false)}));
  w.set("test.u8_array", Value::array(ValueType::UINT8, {Value::u8(0), Value::u8(255)}));
  w.set("test.i64_array", Value::array(ValueType::INT64, {Value::i64(-1), Value::i64(1LL << 40)}));
  w.set("test.f64_array", Value::array(ValueType::FLOAT64, {Value::f64(1e300), Value::f64(-0.0)}));
  // An array of arrays of strings (the shape of tokenizer merges in some
  // converters), including an empty inner array.
  w.set("test.nested_strings",
        Value::array(ValueType::ARRAY,
                     {Value::array(ValueType::STRING, sample_string_items({"a", "", "bc"})),
                      Value::array(ValueType::STRING, {}),
                      Value::array(ValueType::STRING, sample_string_items({"xyz"}))}));
  // Three levels deep, inner arrays of different element types.
  w.set("test.nested3",
        Value::array(ValueType::ARRAY,
                     {Value::array(ValueType::ARRAY,
                                   {Value::array(ValueType::INT16, {Value::i16(-7), Value::i16(7)}),
                                    Value::array(ValueType::FLOAT32, {Value::f32(0.5f)})})}));
}

// Deterministic pseudo-random bytes for tensor `index`.
inline std::vector<uint8_t> sample_tensor_bytes(size_t index, size_t n_bytes) {
  std::mt19937 rng(static_cast<uint32_t>(1234 + index));
  std::vector<uint8_t> bytes(n_bytes);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

inline uint64_t sample_tensor_n_bytes(const SampleTensor& t) {
  uint64_t n = 1;
  for (uint64_t d : t.dims) n *= d;
  const TypeTraits tr = type_traits(t.type);
  return n / tr.block_elems * tr.block_bytes;
}

inline GgufWriter make_sample_writer(uint32_t version = 3, uint64_t alignment = 32) {
  GgufWriter w(version, alignment);
  add_sample_metadata(w);
  const std::vector<SampleTensor> tensors = sample_tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SampleTensor& t = tensors[i];
    w.add_tensor(t.name, t.type, t.dims, sample_tensor_bytes(i, sample_tensor_n_bytes(t)));
  }
  return w;
}

inline std::vector<uint8_t> make_sample_bytes(uint32_t version = 3, uint64_t alignment = 32) {
  return make_sample_writer(version, alignment).to_bytes();
}

}  // namespace kvforge::gguf::testing
