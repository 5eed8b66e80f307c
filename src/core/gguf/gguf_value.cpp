#include "core/gguf/gguf_value.h"

#include "core/enum_names.h"

namespace kvforge::gguf {

constexpr EnumName<ValueType> kValueTypeNames[] = {
    {ValueType::UINT8, "uint8"},     {ValueType::INT8, "int8"},     {ValueType::UINT16, "uint16"},
    {ValueType::INT16, "int16"},     {ValueType::UINT32, "uint32"}, {ValueType::INT32, "int32"},
    {ValueType::FLOAT32, "float32"}, {ValueType::BOOL, "bool"},     {ValueType::STRING, "string"},
    {ValueType::ARRAY, "array"},     {ValueType::UINT64, "uint64"}, {ValueType::INT64, "int64"},
    {ValueType::FLOAT64, "float64"},
};

std::string_view value_type_name(ValueType t) { return name_of(t, kValueTypeNames, "unknown"); }

bool is_valid_value_type(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::FLOAT64); }

Value Value::string_array(const std::vector<std::string>& items) {
  std::vector<Value> values;
  values.reserve(items.size());
  for (const std::string& s : items) values.push_back(Value::string(s));
  return array(ValueType::STRING, std::move(values));
}

Value Value::f32_array(const std::vector<float>& items) {
  std::vector<Value> values;
  values.reserve(items.size());
  for (float f : items) values.push_back(Value::f32(f));
  return array(ValueType::FLOAT32, std::move(values));
}

Value Value::i32_array(const std::vector<int32_t>& items) {
  std::vector<Value> values;
  values.reserve(items.size());
  for (int32_t i : items) values.push_back(Value::i32(i));
  return array(ValueType::INT32, std::move(values));
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64:
      return true;
    default:
      return false;
  }
}

bool Value::is_float() const { return type == ValueType::FLOAT32 || type == ValueType::FLOAT64; }

}  // namespace kvforge::gguf
