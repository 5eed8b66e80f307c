#include "app/chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "app/chat/jinja_error.h"
#include "app/chat/python_format.h"
#include "app/tokenizer/utf8.h"

namespace kvforge::jinja {
namespace {

[[noreturn]] void type_error(int line, const std::string& what) { throw TemplateError(line, what); }

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = valid_utf8_sequence_at(s, i);
    if (n == 0) n = 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

void check_size(size_t n, int line, const char* what) {
  if (n > kMaxBuiltValueSize)
    throw TemplateError(line, std::string(what) + " would exceed " +
                                  std::to_string(kMaxBuiltValueSize) + " elements/bytes");
}

// Argument `index` (positional) or `name` (keyword), or `fallback`.
Value arg(const CallArgs& args, size_t index, std::string_view name, Value fallback = {}) {
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

// str.strip / lstrip / rstrip with an optional set of characters.
std::string strip(const std::string& s, const Value& chars, bool left, bool right, int line) {
  auto strip_me = [&](const std::string& cp) {
    if (chars.is_undefined() || chars.is_none()) return cp.size() == 1 && is_py_space(cp[0]);
    const std::string& set = need_string(chars, line, "strip()");
    return set.find(cp) != std::string::npos;
  };
  const std::vector<std::string> cps = code_points(s);
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_me(cps[b])) ++b;
  if (right)
    while (e > b && strip_me(cps[e - 1])) --e;
  std::string out;
  for (size_t i = b; i < e; ++i) out += cps[i];
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        int64_t count, int line) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between every character and at both ends.
    const auto cps = code_points(s);
    int64_t done = 0;
    for (const auto& cp : cps) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += cp;
      check_size(out.size(), line, "replace()");
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += to;
    check_size(out.size(), line, "replace()");
    pos = hit + from.size();
    ++done;
  }
  out.append(s, pos);
  return out;
}

std::string change_case(std::string s, bool upper) {
  for (char& c : s) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return s;
}

std::string capitalize(const std::string& s) {
  std::string out = change_case(s, false);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

std::string title(const std::string& s) {
  std::string out = s;
  bool word_start = true;
  for (char& c : out) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alpha) {
      c = word_start ? change_case(std::string(1, c), true)[0]
                     : change_case(std::string(1, c), false)[0];
      word_start = false;
    } else {
      word_start = !(c >= '0' && c <= '9') && c != '\'';
    }
  }
  return out;
}

Array split(const std::string& s, const Value& sep_v, int64_t maxsplit, int line) {
  Array out;
  if (sep_v.is_undefined() || sep_v.is_none()) {  // runs of whitespace, no empty strings
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_py_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        std::string rest = s.substr(i);
        while (!rest.empty() && is_py_space(rest.back())) rest.pop_back();
        out.emplace_back(rest);
        return out;
      }
      size_t j = i;
      while (j < s.size() && !is_py_space(s[j])) ++j;
      out.emplace_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  const std::string& sep = need_string(sep_v, line, "split()");
  if (sep.empty()) type_error(line, "split(): empty separator");
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const size_t hit = s.find(sep, pos);
    if (hit == std::string::npos) break;
    out.emplace_back(s.substr(pos, hit - pos));
    pos = hit + sep.size();
    check_size(out.size(), line, "split()");
  }
  out.emplace_back(s.substr(pos));
  return out;
}

bool affix_match(const std::string& s, const Value& affix, bool prefix, int line) {
  auto one = [&](const Value& a) {
    const std::string& x = need_string(a, line, prefix ? "startswith()" : "endswith()");
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0
                  : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_array()) {
    for (const Value& a : affix.as_array())
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& a, int line) {
  if (name == "strip") return Value(strip(s, arg(a, 0, "chars"), true, true, line));
  if (name == "lstrip") return Value(strip(s, arg(a, 0, "chars"), true, false, line));
  if (name == "rstrip") return Value(strip(s, arg(a, 0, "chars"), false, true, line));
  if (name == "upper") return Value(change_case(s, true));
  if (name == "lower") return Value(change_case(s, false));
  if (name == "capitalize") return Value(capitalize(s));
  if (name == "title") return Value(title(s));
  if (name == "startswith") return Value(affix_match(s, arg(a, 0, "prefix"), true, line));
  if (name == "endswith") return Value(affix_match(s, arg(a, 0, "suffix"), false, line));
  if (name == "split") {
    const Value maxsplit = arg(a, 1, "maxsplit", Value(-1));
    return Value(split(s, arg(a, 0, "sep"), need_int(maxsplit, line, "split()"), line));
  }
  if (name == "replace") {
    const Value count = arg(a, 2, "count", Value(-1));
    return Value(replace_all(s, need_string(arg(a, 0, "old"), line, "replace()"),
                             need_string(arg(a, 1, "new"), line, "replace()"),
                             need_int(count, line, "replace()"), line));
  }
  if (name == "find") {
    const size_t hit = s.find(need_string(arg(a, 0, "sub"), line, "find()"));
    return Value(hit == std::string::npos
                     ? int64_t{-1}
                     : static_cast<int64_t>(code_points(s.substr(0, hit)).size()));
  }
  if (name == "count") {
    const std::string& sub = need_string(arg(a, 0, "sub"), line, "count()");
    if (sub.empty()) return Value(static_cast<int64_t>(code_points(s).size() + 1));
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Value(n);
  }
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const Value& v : iterate(arg(a, 0, "iterable"), line)) {
      if (!first) out += s;
      first = false;
      out += need_string(v, line, "str.join()");
      check_size(out.size(), line, "join()");
    }
    return Value(std::move(out));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
    if (s.empty()) return Value(false);
    for (char c : s) {
      const bool digit = c >= '0' && c <= '9';
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      const bool ok = name == "isdigit"   ? digit
                      : name == "isalpha" ? alpha
                      : name == "isspace" ? is_py_space(c)
                                          : digit || alpha;
      if (!ok) return Value(false);
    }
    return Value(true);
  }
  type_error(line, "unsupported string method '" + name + "'");
}

Value object_method(const Value& obj, const std::string& name, const CallArgs& a, int line) {
  if (name == "items") {
    Array out;
    for (const auto& [k, v] : obj.as_object()) out.push_back(Value(Array{Value(k), v}));
    return Value(std::move(out));
  }
  if (name == "keys") {
    Array out;
    for (const auto& [k, v] : obj.as_object()) out.emplace_back(k);
    return Value(std::move(out));
  }
  if (name == "values") {
    Array out;
    for (const auto& [k, v] : obj.as_object()) out.push_back(v);
    return Value(std::move(out));
  }
  if (name == "get") {
    const Value key = arg(a, 0, "key");
    const Value* hit = key.is_string() ? obj.find(key.as_string()) : nullptr;
    return hit ? *hit : arg(a, 1, "default", Value::none());
  }
  type_error(line, "unsupported dict method '" + name + "'");
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
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0;
  }
  if (a.is_array() && b.is_array()) {
    const Array& x = a.as_array();
    const Array& y = b.as_array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!values_equal(x[i], y[i])) return compare_values(x[i], y[i], line, op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size();
  }
  type_error(line, "'" + op + "' not supported between " + a.type_name() + " and " + b.type_name());
}

Value repeat(const Value& seq, int64_t times, int line) {
  if (times <= 0) return seq.is_string() ? Value(std::string()) : Value(Array{});
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

Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
  auto is_num = [](const Value& v) { return v.is_number() || v.kind() == Value::Kind::kBool; };
  auto as_i = [](const Value& v) {
    return v.kind() == Value::Kind::kBool ? int64_t{v.as_bool()} : v.as_int();
  };
  auto as_d = [](const Value& v) {
    return v.kind() == Value::Kind::kBool ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
  };
  auto fail = [&]() -> Value {
    if (a.is_undefined() || b.is_undefined())
      type_error(line, "'" + (a.is_undefined() ? a : b).undefined_name() + "' is undefined");
    type_error(line, "unsupported operand types for " + op + ": " + a.type_name() + " and " +
                         b.type_name());
  };
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size(), line, "'+'");
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_array() && b.is_array()) {
      check_size(a.as_array().size() + b.as_array().size(), line, "'+'");
      Array out = a.as_array();
      out.insert(out.end(), b.as_array().begin(), b.as_array().end());
      return Value(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_array()) && (b.is_int() || b.kind() == Value::Kind::kBool))
      return repeat(a, as_i(b), line);
    if ((b.is_string() || b.is_array()) && (a.is_int() || a.kind() == Value::Kind::kBool))
      return repeat(b, as_i(a), line);
  }
  if (!is_num(a) || !is_num(b)) return fail();
  const bool both_int = !(a.kind() == Value::Kind::kFloat || b.kind() == Value::Kind::kFloat);
  if (both_int && op != "/") {
    const int64_t x = as_i(a), y = as_i(b);
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
  }
  const double x = as_d(a), y = as_d(b);
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
  return fail();
}

bool contains(const Value& container, const Value& item, int line) {
  if (container.is_string()) {
    if (!item.is_string())
      type_error(line, "'in <string>' requires a string on the left, got " + item.type_name());
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_array()) {
    for (const Value& v : container.as_array())
      if (values_equal(v, item)) return true;
    return false;
  }
  if (container.is_object()) return item.is_string() && container.find(item.as_string());
  if (container.is_undefined())
    type_error(line, "'" + container.undefined_name() + "' is undefined");
  type_error(line, "argument of type " + container.type_name() + " is not iterable");
}

// ---- filters ---------------------------------------------------------------

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

// select/reject/selectattr/rejectattr: keep items whose test result is `keep`.
Value filter_items(const Value& seq, const CallArgs& args, bool by_attribute, bool keep, int line) {
  const size_t first_test_arg = by_attribute ? 1 : 0;
  std::string attribute;
  if (by_attribute) attribute = need_string(arg(args, 0, "attribute"), line, "selectattr()");
  const Value test_name =
      first_test_arg < args.positional.size() ? args.positional[first_test_arg] : Value();
  CallArgs test_args;
  for (size_t i = first_test_arg + 1; i < args.positional.size(); ++i)
    test_args.positional.push_back(args.positional[i]);
  Array out;
  for (const Value& item : iterate(seq, line)) {
    const Value subject = by_attribute ? attribute_of(item, attribute, line) : item;
    const bool passed =
        test_name.is_undefined()
            ? subject.truthy()
            : apply_test(need_string(test_name, line, "select()"), subject, test_args, line);
    if (passed == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value join_filter(const Value& seq, const CallArgs& args, int line) {
  const Value sep = arg(args, 0, "d", Value(std::string()));
  const Value attribute = arg(args, 1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(seq, line)) {
    if (!first) out += text_of(sep);
    first = false;
    out += text_of(attribute.is_undefined() ? item : attribute_of(item, text_of(attribute), line));
    check_size(out.size(), line, "join");
  }
  return Value(std::move(out));
}

Value map_filter(const Value& seq, const CallArgs& args, int line) {
  const Value attribute = arg(args, 99, "attribute");
  Array out;
  if (!attribute.is_undefined()) {
    const Value fallback = arg(args, 99, "default");
    for (const Value& item : iterate(seq, line)) {
      Value v = attribute_of(item, text_of(attribute), line);
      out.push_back(v.is_undefined() && !fallback.is_undefined() ? fallback : v);
    }
    return Value(std::move(out));
  }
  if (args.positional.empty()) type_error(line, "map() needs a filter name or attribute=");
  const std::string filter = need_string(args.positional[0], line, "map()");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  for (const Value& item : iterate(seq, line))
    out.push_back(apply_filter(filter, item, rest, line));
  return Value(std::move(out));
}

Value sort_filter(const Value& seq, const CallArgs& args, int line) {
  Array items = iterate(seq, line);
  const bool reverse = arg(args, 0, "reverse", Value(false)).truthy();
  const Value attribute = arg(args, 2, "attribute");
  auto key = [&](const Value& v) {
    return attribute.is_undefined() ? v : attribute_of(v, text_of(attribute), line);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    const int c = compare_values(key(a), key(b), line, "sort");
    return reverse ? c > 0 : c < 0;
  });
  return Value(std::move(items));
}

Value tojson_filter(const Value& v, const CallArgs& args, int line) {
  const Value indent = arg(args, 0, "indent");
  std::optional<int> ind;
  if (!indent.is_undefined() && !indent.is_none()) {
    const int64_t n = need_int(indent, line, "tojson(indent=)");
    if (n < 0 || n > 64) type_error(line, "tojson(indent=) must be in [0, 64]");
    ind = static_cast<int>(n);
  }
  try {
    return Value(python_json_dumps(v, ind, arg(args, 99, "sort_keys", Value(false)).truthy()));
  } catch (const std::invalid_argument& e) {
    type_error(line, std::string("tojson: ") + e.what());
  }
}

Value int_filter(const Value& v, const CallArgs& args) {
  const Value fallback = arg(args, 0, "default", Value(0));
  if (v.is_int()) return v;
  if (v.kind() == Value::Kind::kBool) return Value(int64_t{v.as_bool()});
  if (v.kind() == Value::Kind::kFloat) {
    const double d = v.as_number();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string t = strip(v.as_string(), Value(), true, true, 0);
      const long long n = std::stoll(t, &used);
      if (used == t.size()) return Value(static_cast<int64_t>(n));
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

Value float_filter(const Value& v, const CallArgs& args) {
  const Value fallback = arg(args, 0, "default", Value(0.0));
  if (v.is_number()) return Value(v.as_number());
  if (v.kind() == Value::Kind::kBool) return Value(v.as_bool() ? 1.0 : 0.0);
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string t = strip(v.as_string(), Value(), true, true, 0);
      const double d = std::stod(t, &used);
      if (used == t.size()) return Value(d);
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

Value first_or_last(const Value& v, bool first, int line) {
  if (v.is_string()) {
    const auto cps = code_points(v.as_string());
    if (cps.empty()) return Value::undefined("first");
    return Value(first ? cps.front() : cps.back());
  }
  const Array items = iterate(v, line);
  if (items.empty()) return Value::undefined(first ? "first" : "last");
  return first ? items.front() : items.back();
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string indent_filter(const std::string& s, const CallArgs& args, int line) {
  const Value width = arg(args, 0, "width", Value(4));
  const std::string pad =
      width.is_string()
          ? width.as_string()
          : std::string(
                static_cast<size_t>(std::clamp<int64_t>(need_int(width, line, "indent()"), 0, 256)),
                ' ');
  const bool first = arg(args, 1, "first", Value(false)).truthy();
  const bool blank = arg(args, 2, "blank", Value(false)).truthy();
  std::string out;
  size_t start = 0;
  bool is_first = true;
  while (start <= s.size()) {
    const size_t nl = s.find('\n', start);
    const std::string ln =
        s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if ((!is_first || first) && (blank || !ln.empty())) out += pad;
    out += ln;
    check_size(out.size(), line, "indent()");
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    is_first = false;
  }
  return out;
}

}  // namespace

Array iterate(const Value& v, int line) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return {};
    case Value::Kind::kArray:
      return v.as_array();
    case Value::Kind::kObject: {
      Array keys;
      for (const auto& [k, e] : v.as_object()) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
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
      return static_cast<int64_t>(code_points(v.as_string()).size());
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
    const auto cps = code_points(obj.as_string());
    int64_t i = key.as_int();
    if (i < 0) i += static_cast<int64_t>(cps.size());
    if (i < 0 || i >= static_cast<int64_t>(cps.size()))
      return Value::undefined("[" + std::to_string(key.as_int()) + "]");
    return Value(cps[static_cast<size_t>(i)]);
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

Value call_method(const Value& target, const std::string& name, const CallArgs& args, int line) {
  if (target.is_string()) return string_method(target.as_string(), name, args, line);
  if (target.is_object() && !target.is_namespace()) return object_method(target, name, args, line);
  if (target.is_undefined()) type_error(line, "'" + target.undefined_name() + "' is undefined");
  type_error(line, "'" + target.type_name() + "' object has no method '" + name + "'");
}

Value apply_filter(const std::string& name, const Value& v, const CallArgs& args, int line) {
  if (name == "trim") return Value(strip(text_of(v), arg(args, 0, "chars"), true, true, line));
  if (name == "tojson") return tojson_filter(v, args, line);
  if (name == "length" || name == "count") return Value(length_of(v, line));
  if (name == "string") return Value(text_of(v));
  if (name == "items") {
    if (v.is_undefined()) return Value(Array{});
    if (!v.is_object()) type_error(line, "items filter expects a dict, got " + v.type_name());
    return object_method(v, "items", {}, line);
  }
  if (name == "list") return Value(iterate(v, line));
  if (name == "join") return join_filter(v, args, line);
  if (name == "selectattr") return filter_items(v, args, true, true, line);
  if (name == "rejectattr") return filter_items(v, args, true, false, line);
  if (name == "select") return filter_items(v, args, false, true, line);
  if (name == "reject") return filter_items(v, args, false, false, line);
  if (name == "map") return map_filter(v, args, line);
  if (name == "first") return first_or_last(v, true, line);
  if (name == "last") return first_or_last(v, false, line);
  if (name == "upper") return Value(change_case(text_of(v), true));
  if (name == "lower") return Value(change_case(text_of(v), false));
  if (name == "capitalize") return Value(capitalize(text_of(v)));
  if (name == "title") return Value(title(text_of(v)));
  if (name == "replace") {
    const Value count = arg(args, 2, "count", Value(-1));
    return Value(replace_all(text_of(v), text_of(arg(args, 0, "old")), text_of(arg(args, 1, "new")),
                             need_int(count, line, "replace"), line));
  }
  if (name == "default" || name == "d") {
    const bool boolean = arg(args, 1, "boolean", Value(false)).truthy();
    const bool use_default = boolean ? !v.truthy() : v.is_undefined();
    return use_default ? arg(args, 0, "default_value", Value(std::string())) : v;
  }
  if (name == "int") return int_filter(v, args);
  if (name == "float") return float_filter(v, args);
  if (name == "abs") {
    if (v.is_int()) {
      if (v.as_int() == std::numeric_limits<int64_t>::min())
        type_error(line, "integer overflow in abs");
      return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.is_number()) return Value(std::fabs(v.as_number()));
    type_error(line, "abs expects a number, got " + v.type_name());
  }
  if (name == "reverse") {
    if (v.is_string()) {
      auto cps = code_points(v.as_string());
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return Value(std::move(out));
    }
    Array items = iterate(v, line);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "sort") return sort_filter(v, args, line);
  if (name == "unique") {
    Array out;
    for (const Value& item : iterate(v, line)) {
      if (std::none_of(out.begin(), out.end(),
                       [&](const Value& o) { return values_equal(o, item); }))
        out.push_back(item);
    }
    return Value(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_object()) type_error(line, "dictsort expects a dict, got " + v.type_name());
    Array pairs = object_method(v, "items", {}, line).as_array();
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
      return compare_values(a.as_array()[0], b.as_array()[0], line, "dictsort") < 0;
    });
    return Value(std::move(pairs));
  }
  if (name == "min" || name == "max") {
    const Array items = iterate(v, line);
    if (items.empty()) return Value::undefined(name);
    Value best = items[0];
    for (const Value& item : items) {
      const int c = compare_values(item, best, line, name);
      if ((name == "min" && c < 0) || (name == "max" && c > 0)) best = item;
    }
    return best;
  }
  if (name == "sum") {
    Value total = arg(args, 1, "start", Value(0));
    for (const Value& item : iterate(v, line)) total = arithmetic("+", total, item, line);
    return total;
  }
  if (name == "attr") return attribute_of(v, text_of(arg(args, 0, "name")), line);
  if (name == "safe") return v;
  if (name == "escape" || name == "e") return Value(html_escape(text_of(v)));
  if (name == "indent") return Value(indent_filter(text_of(v), args, line));
  if (name == "wordcount")
    return Value(static_cast<int64_t>(split(text_of(v), Value(), -1, line).size()));
  throw TemplateError(line, "unknown filter '" + name + "'");
}

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
