// Values and operators of the Jinja subset: iteration, len(), indexing,
// slicing, comparison and arithmetic with Python semantics, and the helpers
// the methods, filters and tests share (jinja_builtins_support.h).
#include "app/chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "app/chat/jinja_budget.h"
#include "app/chat/jinja_builtins_support.h"
#include "app/chat/jinja_error.h"
#include "app/chat/python_format.h"
#include "app/tokenizer/utf8.h"

namespace kvforge::jinja {

[[noreturn]] void type_error(int line, const std::string& what) { throw TemplateError(line, what); }

std::vector<std::string> code_points(const std::string& s) {
  charge_bytes(s.size() * sizeof(std::string));
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = valid_utf8_sequence_at(s, i);
    if (n == 0) n = 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t count_code_points(const std::string& s) {
  charge_work(static_cast<int64_t>(s.size() / RenderBudget::kBytesPerUnit));
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) i += std::max<size_t>(1, valid_utf8_sequence_at(s, i));
  return n;
}

std::string code_point_at(const std::string& s, size_t index) {
  size_t i = 0;
  for (size_t k = 0; k < index && i < s.size(); ++k)
    i += std::max<size_t>(1, valid_utf8_sequence_at(s, i));
  charge_work(static_cast<int64_t>(i / RenderBudget::kBytesPerUnit));
  if (i >= s.size()) return {};
  return s.substr(i, std::max<size_t>(1, valid_utf8_sequence_at(s, i)));
}

TextSearch::TextSearch(const std::string& needle) : needle_(needle), border_(needle.size(), 0) {
  charge_bytes(needle.size() * sizeof(size_t));
  for (size_t i = 1, k = 0; i < needle.size(); ++i) {
    while (k > 0 && needle[i] != needle[k]) k = border_[k - 1];
    if (needle[i] == needle[k]) ++k;
    border_[i] = k;
  }
}

size_t TextSearch::find(const std::string& haystack, size_t pos) const {
  if (needle_.empty()) return pos <= haystack.size() ? pos : std::string::npos;
  size_t k = 0;
  for (size_t i = pos; i < haystack.size(); ++i) {
    while (k > 0 && haystack[i] != needle_[k]) k = border_[k - 1];
    if (haystack[i] == needle_[k]) ++k;
    if (k == needle_.size()) {
      charge_work(static_cast<int64_t>((i + 1 - pos) / RenderBudget::kBytesPerUnit));
      return i + 1 - k;
    }
  }
  charge_work(static_cast<int64_t>((haystack.size() - std::min(pos, haystack.size())) /
                                   RenderBudget::kBytesPerUnit));
  return std::string::npos;
}

void check_size(size_t n, int line, const char* what) {
  if (n > kMaxBuiltValueSize)
    throw TemplateError(line, std::string(what) + " would exceed " +
                                  std::to_string(kMaxBuiltValueSize) + " elements/bytes");
}

// Argument `index` (positional) or `name` (keyword), or `fallback`.
Value arg(const CallArgs& args, size_t index, std::string_view name, Value fallback) {
  if (index < args.positional.size()) return args.positional[index];
  for (const auto& [k, v] : args.keyword)
    if (k == name) return v;
  return fallback;
}

const std::string& need_string(const Value& v, int line, const std::string& what) {
  if (!v.is_string()) type_error(line, what + " expects a string, got " + v.type_name());
  return v.as_string();
}

int64_t need_int(const Value& v, int line, const std::string& what) {
  if (v.is_int()) return v.as_int();
  if (v.kind() == Value::Kind::kBool) return v.as_bool() ? 1 : 0;
  type_error(line, what + " expects an integer, got " + v.type_name());
}

std::string text_of(const Value& v) { return python_str(v); }

bool is_py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int compare_values(const Value& a, const Value& b, int line, const std::string& op) {
  if ((a.is_number() || a.kind() == Value::Kind::kBool) &&
      (b.is_number() || b.kind() == Value::Kind::kBool)) {
    auto num = [](const Value& v) {
      return v.kind() == Value::Kind::kBool ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
    };
    if (a.is_int() && b.is_int()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
    return num(a) < num(b) ? -1 : num(a) > num(b);
  }
  if (a.is_string() && b.is_string()) {
    charge_work(static_cast<int64_t>(std::min(a.as_string().size(), b.as_string().size()) /
                                     RenderBudget::kBytesPerUnit),
                line);
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0;
  }
  if (a.is_array() && b.is_array()) {
    const Array& x = a.as_array();
    const Array& y = b.as_array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      charge_work(1, line);
      if (!values_equal(x[i], y[i])) return compare_values(x[i], y[i], line, op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size();
  }
  type_error(line, "'" + op + "' not supported between " + a.type_name() + " and " + b.type_name());
}

namespace {

// `seq * times` is sized by the bytes it copies (a list of strings copies the
// strings), and charged before anything is built.
void charge_repeat(const Value& seq, int64_t times, int line) {
  const size_t per_copy = copy_bytes(seq);
  charge_work(seq.is_array() ? static_cast<int64_t>(seq.as_array().size()) : 0, line);
  const auto n = static_cast<size_t>(times);
  charge_bytes(per_copy != 0 && n > SIZE_MAX / per_copy ? SIZE_MAX : per_copy * n, line);
}

Value repeat(const Value& seq, int64_t times, int line) {
  if (times <= 0) return seq.is_string() ? Value(std::string()) : Value(Array{});
  charge_repeat(seq, times, line);
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    check_size(s.size() * static_cast<size_t>(std::min<int64_t>(times, kMaxBuiltValueSize + 1)),
               line, "'*'");
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value(std::move(out));
  }
  const Array& a = seq.as_array();
  check_size(a.size() * static_cast<size_t>(std::min<int64_t>(times, kMaxBuiltValueSize + 1)), line,
             "'*'");
  Array out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), a.begin(), a.end());
  return Value(std::move(out));
}

bool is_numeric(const Value& v) { return v.is_number() || v.kind() == Value::Kind::kBool; }
int64_t int_of(const Value& v) {
  return v.kind() == Value::Kind::kBool ? int64_t{v.as_bool()} : v.as_int();
}
double double_of(const Value& v) {
  return v.kind() == Value::Kind::kBool ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
}

[[noreturn]] void operand_error(const std::string& op, const Value& a, const Value& b, int line) {
  if (a.is_undefined() || b.is_undefined())
    type_error(line, "'" + (a.is_undefined() ? a : b).undefined_name() + "' is undefined");
  type_error(
      line, "unsupported operand types for " + op + ": " + a.type_name() + " and " + b.type_name());
}

// '+' of two strings or two lists, '*' of a string or list and an integer.
std::optional<Value> sequence_arithmetic(const std::string& op, const Value& a, const Value& b,
                                         int line) {
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size(), line, "'+'");
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_array() && b.is_array()) {
      check_size(a.as_array().size() + b.as_array().size(), line, "'+'");
      charge_work(static_cast<int64_t>(a.as_array().size() + b.as_array().size()), line);
      charge_bytes(copy_bytes(a) + copy_bytes(b), line);
      Array out = a.as_array();
      out.insert(out.end(), b.as_array().begin(), b.as_array().end());
      return Value(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_array()) && (b.is_int() || b.kind() == Value::Kind::kBool))
      return repeat(a, int_of(b), line);
    if ((b.is_string() || b.is_array()) && (a.is_int() || a.kind() == Value::Kind::kBool))
      return repeat(b, int_of(a), line);
  }
  return std::nullopt;
}

// Integer operators with Python's floor division and modulo; overflow is an
// error. Nothing for an operator integers leave to floats.
std::optional<Value> integer_arithmetic(const std::string& op, int64_t x, int64_t y, int line) {
  int64_t r = 0;
  if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value(r);
  if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value(r);
  if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value(r);
  if (op == "//" || op == "%") {
    if (y == 0) type_error(line, "integer division or modulo by zero");
    if (x == std::numeric_limits<int64_t>::min() && y == -1)
      type_error(line, "integer overflow in " + op);
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors; C++ truncates
      --q;
      m += y;
    }
    return Value(op == "//" ? q : m);
  }
  if (op == "**") {
    if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
    int64_t result = 1;
    for (int64_t i = 0; i < y; ++i) {
      if (__builtin_mul_overflow(result, x, &result)) type_error(line, "integer overflow in **");
      if (result == 0 || result == 1) break;
    }
    return Value(result);
  }
  if (op == "+" || op == "-" || op == "*") type_error(line, "integer overflow in " + op);
  return std::nullopt;
}

// Float operators with Python's floor division and modulo. Nothing for an unknown operator.
std::optional<Value> float_arithmetic(const std::string& op, double x, double y, int line) {
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "**") return Value(std::pow(x, y));
  if (y == 0) type_error(line, "float division by zero");
  if (op == "/") return Value(x / y);
  if (op == "//") return Value(std::floor(x / y));
  if (op == "%") {
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value(m);
  }
  return std::nullopt;
}

}  // namespace

Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
  if (std::optional<Value> r = sequence_arithmetic(op, a, b, line)) return std::move(*r);
  if (!is_numeric(a) || !is_numeric(b)) operand_error(op, a, b, line);
  const bool both_int = !(a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat);
  if (both_int && op != "/")
    if (std::optional<Value> r = integer_arithmetic(op, int_of(a), int_of(b), line))
      return std::move(*r);
  if (std::optional<Value> r = float_arithmetic(op, double_of(a), double_of(b), line))
    return std::move(*r);
  operand_error(op, a, b, line);
}

bool contains(const Value& container, const Value& item, int line) {
  if (container.is_string()) {
    if (!item.is_string())
      type_error(line, "'in <string>' requires a string on the left, got " + item.type_name());
    return TextSearch(item.as_string()).find(container.as_string()) != std::string::npos;
  }
  if (container.is_array()) {
    charge_work(static_cast<int64_t>(container.as_array().size()), line);
    for (const Value& v : container.as_array())
      if (values_equal(v, item)) return true;
    return false;
  }
  if (container.is_object()) return item.is_string() && container.find(item.as_string());
  if (container.is_undefined())
    type_error(line, "'" + container.undefined_name() + "' is undefined");
  type_error(line, "argument of type " + container.type_name() + " is not iterable");
}

Value attribute_of(const Value& v, const std::string& path, int line) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (cur.is_object()) {
      const Value* hit = cur.find(part);
      cur = hit ? *hit : Value::undefined(part);
    } else if (cur.is_array() && !part.empty() &&
               std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      cur = get_item(cur, Value(static_cast<int64_t>(std::stoll(part))), line);
    } else {
      return Value::undefined(part);
    }
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Array iterate(const Value& v, int line) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return {};
    case Value::Kind::kArray:
      charge_work(static_cast<int64_t>(v.as_array().size()), line);
      charge_bytes(copy_bytes(v), line);
      return v.as_array();
    case Value::Kind::kObject: {
      charge_work(static_cast<int64_t>(v.as_object().size()), line);
      charge_bytes(copy_bytes(v), line);
      Array keys;
      for (const auto& [k, e] : v.as_object()) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      charge_bytes(v.as_string().size() * sizeof(Value), line);
      Array out;
      for (auto& cp : code_points(v.as_string())) out.emplace_back(std::move(cp));
      return out;
    }
    default:
      type_error(line, "'" + v.type_name() + "' object is not iterable");
  }
}

int64_t length_of(const Value& v, int line) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(count_code_points(v.as_string()));
    case Value::Kind::kArray:
      return static_cast<int64_t>(v.as_array().size());
    case Value::Kind::kObject:
      return static_cast<int64_t>(v.as_object().size());
    default:
      type_error(line, "object of type '" + v.type_name() + "' has no len()");
  }
}

Value get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) type_error(line, "'" + obj.undefined_name() + "' is undefined");
  if (obj.is_object()) {
    if (!key.is_string()) return Value::undefined(python_str(key));
    const Value* hit = obj.find(key.as_string());
    return hit ? *hit : Value::undefined(key.as_string());
  }
  if (obj.is_array() || obj.is_string()) {
    if (!key.is_int()) {
      if (key.is_string()) return Value::undefined(key.as_string());
      type_error(line, "indices must be integers, got " + key.type_name());
    }
    if (obj.is_array()) {
      const Array& a = obj.as_array();
      int64_t i = key.as_int();
      if (i < 0) i += static_cast<int64_t>(a.size());
      if (i < 0 || i >= static_cast<int64_t>(a.size()))
        return Value::undefined("[" + std::to_string(key.as_int()) + "]");
      return a[static_cast<size_t>(i)];
    }
    const std::string& s = obj.as_string();
    int64_t i = key.as_int();
    if (i < 0) i += static_cast<int64_t>(count_code_points(s));
    std::string cp = i >= 0 ? code_point_at(s, static_cast<size_t>(i)) : std::string();
    if (cp.empty()) return Value::undefined("[" + std::to_string(key.as_int()) + "]");
    return Value(std::move(cp));
  }
  return Value::undefined(python_str(key));
}

Value get_slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v,
                int line) {
  auto opt = [&](const Value& v, const char* what) -> std::optional<int64_t> {
    if (!v.is_undefined() && !v.is_none()) return need_int(v, line, std::string("slice ") + what);
    return std::nullopt;
  };
  const auto step_o = opt(step_v, "step");
  const int64_t step = step_o.value_or(1);
  if (step == 0) type_error(line, "slice step cannot be zero");
  Array items;
  std::vector<std::string> cps;
  int64_t n = 0;
  if (obj.is_array()) {
    n = static_cast<int64_t>(obj.as_array().size());
  } else if (obj.is_string()) {
    cps = code_points(obj.as_string());
    n = static_cast<int64_t>(cps.size());
  } else if (obj.is_undefined()) {
    type_error(line, "'" + obj.undefined_name() + "' is undefined");
  } else {
    type_error(line, "cannot slice a " + obj.type_name());
  }
  // Python's slice.indices().
  auto clamp_index = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t i = *v;
    if (i < 0)
      i = std::max<int64_t>(i + n, step < 0 ? -1 : 0);
    else
      i = std::min<int64_t>(i, step < 0 ? n - 1 : n);
    return i;
  };
  const int64_t start = clamp_index(opt(start_v, "start"), step < 0 ? n - 1 : 0);
  const int64_t stop = clamp_index(opt(stop_v, "stop"), step < 0 ? -1 : n);
  const int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                 : (start > stop ? (start - stop - step - 1) / -step : 0);
  charge_work(count, line);
  std::string text;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (obj.is_array())
      items.push_back(obj.as_array()[static_cast<size_t>(i)]);
    else
      text += cps[static_cast<size_t>(i)];
  }
  if (obj.is_string()) return Value(std::move(text));
  return Value(std::move(items));
}

Value apply_binary(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "==") return Value(values_equal(a, b));
  if (op == "!=") return Value(!values_equal(a, b));
  if (op == "<") return Value(compare_values(a, b, line, op) < 0);
  if (op == ">") return Value(compare_values(a, b, line, op) > 0);
  if (op == "<=") return Value(compare_values(a, b, line, op) <= 0);
  if (op == ">=") return Value(compare_values(a, b, line, op) >= 0);
  if (op == "in") return Value(contains(b, a, line));
  if (op == "not in") return Value(!contains(b, a, line));
  if (op == "~") {
    std::string s = text_of(a) + text_of(b);
    check_size(s.size(), line, "'~'");
    return Value(std::move(s));
  }
  return arithmetic(op, a, b, line);
}

}  // namespace kvforge::jinja
