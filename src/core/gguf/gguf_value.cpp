#include "core/gguf/gguf_value.h"

namespace kvforge::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
      return "uint8";
    case ValueType::INT8:
      return "int8";
    case ValueType::UINT16:
      return "uint16";
    case ValueType::INT16:
      return "int16";
    case ValueType::UINT32:
      return "uint32";
    case ValueType::INT32:
      return "int32";
    case ValueType::FLOAT32:
      return "float32";
    case ValueType::BOOL:
      return "bool";
    case ValueType::STRING:
      return "string";
    case ValueType::ARRAY:
      return "array";
    case ValueType::UINT64:
      return "uint64";
    case ValueType::INT64:
      return "int64";
    case ValueType::FLOAT64:
      return "float64";
  }
  return "unknown";
}

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
