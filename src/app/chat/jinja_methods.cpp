// Python's string and dict methods as templates call them: `s.strip()`,
// `s.split(",")`, `d.items()`, ...
#include <algorithm>
#include <cmath>
#include <limits>

#include "app/chat/jinja_budget.h"
#include "app/chat/jinja_builtins.h"
#include "app/chat/jinja_builtins_support.h"
#include "app/chat/jinja_error.h"
#include "app/chat/python_format.h"
#include "app/tokenizer/utf8.h"

namespace kvforge::jinja {

// str.strip / lstrip / rstrip with an optional set of characters.
std::string strip(const std::string& s, const Value& chars, bool left, bool right, int line) {
  if (chars.is_undefined() || chars.is_none()) {  // whitespace (ASCII): no code points needed
    size_t b = 0, e = s.size();
    if (left)
      while (b < e && is_py_space(s[b])) ++b;
    if (right)
      while (e > b && is_py_space(s[e - 1])) --e;
    return s.substr(b, e - b);
  }
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
  const TextSearch search(from);
  while (count < 0 || done < count) {
    const size_t hit = search.find(s, pos);
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
      charge_bytes(sizeof(Value) + j - i, line);
      out.emplace_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  const std::string& sep = need_string(sep_v, line, "split()");
  if (sep.empty()) type_error(line, "split(): empty separator");
  size_t pos = 0;
  const TextSearch search(sep);
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const size_t hit = search.find(s, pos);
    if (hit == std::string::npos) break;
    out.emplace_back(s.substr(pos, hit - pos));
    charge_bytes(sizeof(Value) + hit - pos, line);
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

namespace {

// str.join: the strings of `items` with `sep` between them.
std::string join(const std::string& sep, const Value& items, int line) {
  std::string out;
  bool first = true;
  for (const Value& v : iterate(items, line)) {
    charge_work(1, line);
    if (!first) out += sep;
    first = false;
    out += need_string(v, line, "str.join()");
    check_size(out.size(), line, "join()");
  }
  return out;
}

// str.isdigit / isalpha / isspace / isalnum (`name`) over ASCII classes;
// false for the empty string, as in Python.
bool is_char_class(const std::string& s, const std::string& name) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool digit = c >= '0' && c <= '9';
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool ok = name == "isdigit"   ? digit
                    : name == "isalpha" ? alpha
                    : name == "isspace" ? is_py_space(c)
                                        : digit || alpha;
    if (!ok) return false;
  }
  return true;
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
    const size_t hit = TextSearch(need_string(arg(a, 0, "sub"), line, "find()")).find(s);
    return Value(hit == std::string::npos
                     ? int64_t{-1}
                     : static_cast<int64_t>(count_code_points(s.substr(0, hit))));
  }
  if (name == "count") {
    const std::string& sub = need_string(arg(a, 0, "sub"), line, "count()");
    if (sub.empty()) return Value(static_cast<int64_t>(count_code_points(s) + 1));
    int64_t n = 0;
    const TextSearch search(sub);
    for (size_t p = search.find(s); p != std::string::npos; p = search.find(s, p + sub.size())) ++n;
    return Value(n);
  }
  if (name == "join") return Value(join(s, arg(a, 0, "iterable"), line));
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum")
    return Value(is_char_class(s, name));
  type_error(line, "unsupported string method '" + name + "'");
}

}  // namespace

Value object_method(const Value& obj, const std::string& name, const CallArgs& a, int line) {
  charge_work(static_cast<int64_t>(obj.as_object().size()), line);
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

Value call_method(const Value& target, const std::string& name, const CallArgs& args, int line) {
  if (target.is_string()) return string_method(target.as_string(), name, args, line);
  if (target.is_object() && !target.is_namespace()) return object_method(target, name, args, line);
  if (target.is_undefined()) type_error(line, "'" + target.undefined_name() + "' is undefined");
  type_error(line, "'" + target.type_name() + "' object has no method '" + name + "'");
}

}  // namespace kvforge::jinja
