// Helpers shared by the files that implement the Jinja builtins
// (jinja_builtins.cpp: values and operators; jinja_methods.cpp: string and
// dict methods; jinja_filters.cpp; jinja_tests.cpp). Not used elsewhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "app/chat/jinja_value.h"

namespace kvforge::jinja {

[[noreturn]] void type_error(int line, const std::string& what);
// The UTF-8 code points of s, each as its bytes (an invalid byte on its own).
// Charged to the render's budget: each code point costs a std::string.
std::vector<std::string> code_points(const std::string& s);
// How many code_points(s) would return, and the i-th of them (0 <= i < count),
// without building the list.
size_t count_code_points(const std::string& s);
std::string code_point_at(const std::string& s, size_t i);

// Substring search in O(haystack + needle) whatever the input:
// std::string::find takes O(haystack x needle) on inputs such as
// 'aaa...a' in 'aaa...ab'. Charges the bytes it scans.
class TextSearch {
 public:
  explicit TextSearch(const std::string& needle);
  // The first match at or after pos, or npos (an empty needle matches at pos).
  size_t find(const std::string& haystack, size_t pos = 0) const;

 private:
  const std::string& needle_;
  std::vector<size_t> border_;  // (needle size) KMP: longest proper border of needle[0..i]
};
// Throws when a built string or list of n bytes/elements exceeds kMaxBuiltValueSize.
void check_size(size_t n, int line, const char* what);
// Argument `index` (positional) or `name` (keyword), or `fallback`.
Value arg(const CallArgs& args, size_t index, std::string_view name, Value fallback = {});
const std::string& need_string(const Value& v, int line, const std::string& what);
int64_t need_int(const Value& v, int line, const std::string& what);
// Python str(v).
std::string text_of(const Value& v);
bool is_py_space(char c);

// Python's ordering of numbers, strings and lists: -1, 0 or 1.
int compare_values(const Value& a, const Value& b, int line, const std::string& op);
// + - * / // % ** with Python semantics.
Value arithmetic(const std::string& op, const Value& a, const Value& b, int line);
// `item in container`.
bool contains(const Value& container, const Value& item, int line);
// v.a.b.c (dotted path), as filters' attribute= arguments name it.
Value attribute_of(const Value& v, const std::string& path, int line);

// String operations shared by methods and filters (jinja_methods.cpp).
std::string strip(const std::string& s, const Value& chars, bool left, bool right, int line);
std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        int64_t count, int line);
std::string change_case(std::string s, bool upper);
std::string capitalize(const std::string& s);
std::string title(const std::string& s);
Array split(const std::string& s, const Value& sep_v, int64_t maxsplit, int line);
// dict.items() / keys() / values() / get().
Value object_method(const Value& obj, const std::string& name, const CallArgs& a, int line);

}  // namespace kvforge::jinja
