// The filters (jinja_filters.cpp), tests (jinja_tests.cpp), methods
// (jinja_methods.cpp) and operators (jinja_builtins.cpp) of the supported Jinja subset,
// with Python semantics (string methods, list and dict methods, `+` on
// strings and lists, floor division and modulo signs, ...). Errors throw
// TemplateError naming the construct and the offending types.
#pragma once

#include <string>

#include "app/chat/jinja_value.h"

namespace kvforge::jinja {

// Upper bound on a string or list a template builds with `*`, range() or
// string methods; rendering a chat prompt never needs more.
constexpr size_t kMaxBuiltValueSize = 1 << 20;

Value apply_filter(const std::string& name, const Value& target, const CallArgs& args, int line);
bool apply_test(const std::string& name, const Value& target, const CallArgs& args, int line);
// `target.name(args)` where target has no entry `name` (str.strip, dict.items, ...).
Value call_method(const Value& target, const std::string& name, const CallArgs& args, int line);
// Arithmetic and comparison operators: + - * / // % ** ~ == != < > <= >= in "not in".
Value apply_binary(const std::string& op, const Value& a, const Value& b, int line);
// The elements `for x in v` visits: list items, dict keys, string characters;
// an undefined or none value gives nothing.
Array iterate(const Value& v, int line);
// Python len(); throws for values without a length.
int64_t length_of(const Value& v, int line);
// obj[key] with Python indexing (negative list indexes count from the end); a
// missing key or index gives an undefined value.
Value get_item(const Value& obj, const Value& key, int line);
// obj[start:stop:step] on lists and strings (by code point).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step,
                int line);

}  // namespace kvforge::jinja
