// Jinja tests (`x is name(args)`).
#include <algorithm>
#include <cmath>
#include <limits>

#include "app/chat/jinja_builtins.h"
#include "app/chat/jinja_builtins_support.h"
#include "app/chat/jinja_error.h"
#include "app/chat/python_format.h"
#include "app/tokenizer/utf8.h"

namespace kvforge::jinja {

bool apply_test(const std::string& name, const Value& v, const CallArgs& args, int line) {
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_object();
  if (name == "iterable") return v.is_string() || v.is_array() || v.is_object();
  if (name == "sequence") return v.is_string() || v.is_array() || v.is_object();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.kind() == K::kFloat;
  if (name == "boolean") return v.kind() == K::kBool;
  if (name == "true") return v.kind() == K::kBool && v.as_bool();
  if (name == "false") return v.kind() == K::kBool && !v.as_bool();
  if (name == "callable") return v.is_function();
  if (name == "odd" || name == "even") {
    const int64_t n = need_int(v, line, "test '" + name + "'");
    return (n % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const int64_t d = need_int(arg(args, 0, "num"), line, "divisibleby");
    if (d == 0) type_error(line, "divisibleby(0)");
    return need_int(v, line, "divisibleby") % d == 0;
  }
  if (name == "lower") return v.is_string() && change_case(v.as_string(), false) == v.as_string();
  if (name == "upper") return v.is_string() && change_case(v.as_string(), true) == v.as_string();
  static constexpr std::pair<std::string_view, std::string_view> kComparisons[] = {
      {"equalto", "=="}, {"eq", "=="}, {"==", "=="},      {"ne", "!="},
      {"!=", "!="},      {"lt", "<"},  {"lessthan", "<"}, {"<", "<"},
      {"le", "<="},      {"<=", "<="}, {"gt", ">"},       {"greaterthan", ">"},
      {">", ">"},        {"ge", ">="}, {">=", ">="},      {"in", "in"}};
  for (const auto& [test, op] : kComparisons)
    if (name == test) return apply_binary(std::string(op), v, arg(args, 0, "other"), line).truthy();
  if (name == "sameas") {
    const Value other = arg(args, 0, "other");
    if (v.kind() != other.kind()) return false;
    if (v.is_none() || v.is_undefined()) return true;
    if (v.kind() == K::kBool) return v.as_bool() == other.as_bool();
    return values_equal(v, other) && (v.is_int() || v.is_string());
  }
  throw TemplateError(line, "unknown test '" + name + "'");
}

}  // namespace kvforge::jinja
