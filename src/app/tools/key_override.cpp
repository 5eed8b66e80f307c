#include "app/tools/key_override.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace kvforge {
namespace {

[[noreturn]] void refuse(std::string_view text, const std::string& why) {
  throw std::invalid_argument("--override-kv '" + std::string(text) + "': " + why +
                              " (expected KEY=TYPE:VALUE, TYPE int, float, bool or str)");
}

template <typename T>
bool parse_number(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

gguf::Value typed_value(std::string_view text, std::string_view type, std::string_view value) {
  if (type == "str") return gguf::Value::string(std::string(value));
  if (type == "bool") {
    if (value != "true" && value != "false") refuse(text, "a bool is true or false");
    return gguf::Value::boolean(value == "true");
  }
  if (type == "int") {
    uint32_t v = 0;
    if (!parse_number(value, v)) refuse(text, "an int is written as UINT32: 0..4294967295");
    return gguf::Value::u32(v);
  }
  if (type == "float") {
    float v = 0;
    if (!parse_number(value, v) || !std::isfinite(v)) refuse(text, "not a finite float");
    return gguf::Value::f32(v);
  }
  refuse(text, "unknown type '" + std::string(type) + "'");
}

}  // namespace

KeyOverride parse_key_override(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) refuse(text, "no KEY=");
  const std::string_view rest = text.substr(eq + 1);
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos) refuse(text, "no TYPE: before the value");
  return {std::string(text.substr(0, eq)),
          typed_value(text, rest.substr(0, colon), rest.substr(colon + 1))};
}

}  // namespace kvforge
