// A GGUF metadata value: one of the 13 GGUF value types, arrays possibly nested.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kvforge::gguf {

// Numbering of gguf_metadata_value_type in the GGUF specification.
enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

// "uint8", "string", "array", ...; "unknown" for ids outside the table.
std::string_view value_type_name(ValueType t);
// True for the 13 ids of the specification.
bool is_valid_value_type(uint32_t id);

// Arrays may nest (an array of arrays of strings); the reader and the writer
// refuse deeper nesting than this so that hostile files cannot exhaust the stack.
constexpr int kMaxArrayDepth = 8;

struct Value;

struct Array {
  ValueType element_type = ValueType::UINT8;
  std::vector<Value> items;

  friend bool operator==(const Array&, const Array&) = default;
};

// Integers are widened for storage but `type` keeps the on-disk type, so a
// value read from a file writes back byte-identically.
struct Value {
  ValueType type = ValueType::UINT8;
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> data;

  static Value u8(uint8_t v) { return {ValueType::UINT8, uint64_t{v}}; }
  static Value i8(int8_t v) { return {ValueType::INT8, int64_t{v}}; }
  static Value u16(uint16_t v) { return {ValueType::UINT16, uint64_t{v}}; }
  static Value i16(int16_t v) { return {ValueType::INT16, int64_t{v}}; }
  static Value u32(uint32_t v) { return {ValueType::UINT32, uint64_t{v}}; }
  static Value i32(int32_t v) { return {ValueType::INT32, int64_t{v}}; }
  static Value u64(uint64_t v) { return {ValueType::UINT64, v}; }
  static Value i64(int64_t v) { return {ValueType::INT64, v}; }
  static Value f32(float v) { return {ValueType::FLOAT32, double{v}}; }
  static Value f64(double v) { return {ValueType::FLOAT64, v}; }
  static Value boolean(bool v) { return {ValueType::BOOL, v}; }
  static Value string(std::string v) { return {ValueType::STRING, std::move(v)}; }
  static Value array(ValueType element_type, std::vector<Value> items) {
    return {ValueType::ARRAY, Array{element_type, std::move(items)}};
  }
  static Value string_array(const std::vector<std::string>& items);
  static Value f32_array(const std::vector<float>& items);
  static Value i32_array(const std::vector<int32_t>& items);

  bool is_integer() const;
  bool is_float() const;
  bool is_string() const { return type == ValueType::STRING; }
  bool is_array() const { return type == ValueType::ARRAY; }

  // Same type and same value (floats compare as numbers: NaN != NaN).
  friend bool operator==(const Value&, const Value&) = default;
};

struct KeyValue {
  std::string key;
  Value value;

  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

}  // namespace kvforge::gguf
