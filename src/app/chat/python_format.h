// Python's text forms of template values: str() for `{{ x }}` and `|string`,
// repr() for items inside a printed list or dict, and json.dumps for
// `|tojson` as Hugging Face configures it (ensure_ascii=False; separators
// ", " and ": ", or "," and ": " when indenting). Templates embed these
// strings in prompts, so they must match Python byte for byte.
#pragma once

#include <optional>
#include <string>

#include "app/chat/jinja_value.h"

namespace kvforge::jinja {

std::string python_float_repr(double d);  // 1.0, 0.1, 1e-05, 1e+16, inf, nan
std::string python_str(const Value& v);
std::string python_repr(const Value& v);
// Throws std::invalid_argument for values JSON cannot hold (functions, undefined).
std::string python_json_dumps(const Value& v, std::optional<int> indent, bool sort_keys = false);

}  // namespace kvforge::jinja
