// Jinja filters (`x | name(args)`): the subset chat templates use.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_set>

#include "app/chat/jinja_budget.h"
#include "app/chat/jinja_builtins.h"
#include "app/chat/jinja_builtins_support.h"
#include "app/chat/jinja_error.h"
#include "app/chat/python_format.h"
#include "app/tokenizer/utf8.h"

namespace kvforge::jinja {
namespace {

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
    charge_work(1, line);
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
    charge_work(1, line);
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
  charge_work(static_cast<int64_t>(items.size() * std::bit_width(items.size())), line);
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

// Reads one end only: `|first` on a long string or list in a loop stays cheap.
Value first_or_last(const Value& v, bool first, int line) {
  const char* name = first ? "first" : "last";
  if (v.is_string()) {
    const std::string& s = v.as_string();
    if (s.empty()) return Value::undefined(name);
    if (first) return Value(code_point_at(s, 0));
    // A valid sequence that ends the string starts with a lead byte, so it is
    // also the last of code_points(s); otherwise the last byte stands alone.
    for (size_t k = std::min<size_t>(4, s.size()); k >= 2; --k)
      if (valid_utf8_sequence_at(s, s.size() - k) == k) return Value(s.substr(s.size() - k));
    return Value(s.substr(s.size() - 1));
  }
  if (v.is_array()) {
    const Array& items = v.as_array();
    if (items.empty()) return Value::undefined(name);
    return first ? items.front() : items.back();
  }
  const Array items = iterate(v, line);
  if (items.empty()) return Value::undefined(name);
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

// Filters on text: the value's str() is what they work on.
std::optional<Value> text_filter(const std::string& name, const Value& v, const CallArgs& args,
                                 int line) {
  if (name == "trim") return Value(strip(text_of(v), arg(args, 0, "chars"), true, true, line));
  if (name == "string") return Value(text_of(v));
  if (name == "upper") return Value(change_case(text_of(v), true));
  if (name == "lower") return Value(change_case(text_of(v), false));
  if (name == "capitalize") return Value(capitalize(text_of(v)));
  if (name == "title") return Value(title(text_of(v)));
  if (name == "replace") {
    const Value count = arg(args, 2, "count", Value(-1));
    return Value(replace_all(text_of(v), text_of(arg(args, 0, "old")), text_of(arg(args, 1, "new")),
                             need_int(count, line, "replace"), line));
  }
  if (name == "escape" || name == "e") return Value(html_escape(text_of(v)));
  if (name == "indent") return Value(indent_filter(text_of(v), args, line));
  if (name == "wordcount")
    return Value(static_cast<int64_t>(split(text_of(v), Value(), -1, line).size()));
  return std::nullopt;
}

Value reverse_filter(const Value& v, int line) {
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

// A key equal for values Python's == calls equal (1, 1.0 and True), for the
// hashable kinds; nullopt for lists and dicts.
std::optional<std::string> unique_key(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNone:
      return "N";
    case Value::Kind::kBool:
      return v.as_bool() ? "n1" : "n0";
    case Value::Kind::kInt:
      return "n" + std::to_string(v.as_int());
    case Value::Kind::kFloat: {
      const double d = v.as_number();
      if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18)
        return "n" + std::to_string(static_cast<int64_t>(d));
      return "f" + python_float_repr(d);
    }
    case Value::Kind::kString:
      return "s" + v.as_string();
    default:
      return std::nullopt;
  }
}

// Linear for hashable items (a set of keys, as Python's), a scan for the rest.
Value unique_filter(const Value& v, int line) {
  Array out;
  std::unordered_set<std::string> seen;
  for (const Value& item : iterate(v, line)) {
    charge_work(1, line);
    if (const std::optional<std::string> key = unique_key(item)) {
      charge_bytes(key->size(), line);
      if (seen.insert(*key).second) out.push_back(item);
    } else if (std::none_of(out.begin(), out.end(),
                            [&](const Value& o) { return values_equal(o, item); })) {
      charge_work(static_cast<int64_t>(out.size()), line);
      out.push_back(item);
    }
  }
  return Value(std::move(out));
}

Value dictsort_filter(const Value& v, int line) {
  if (!v.is_object()) type_error(line, "dictsort expects a dict, got " + v.type_name());
  Array pairs = object_method(v, "items", {}, line).as_array();
  charge_work(static_cast<int64_t>(pairs.size() * std::bit_width(pairs.size())), line);
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
    return compare_values(a.as_array()[0], b.as_array()[0], line, "dictsort") < 0;
  });
  return Value(std::move(pairs));
}

Value min_max_filter(const std::string& name, const Value& v, int line) {
  const Array items = iterate(v, line);
  if (items.empty()) return Value::undefined(name);
  Value best = items[0];
  for (const Value& item : items) {
    charge_work(1, line);
    const int c = compare_values(item, best, line, name);
    if ((name == "min" && c < 0) || (name == "max" && c > 0)) best = item;
  }
  return best;
}

// Filters on sequences and mappings.
std::optional<Value> sequence_filter(const std::string& name, const Value& v, const CallArgs& args,
                                     int line) {
  if (name == "length" || name == "count") return Value(length_of(v, line));
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
  if (name == "reverse") return reverse_filter(v, line);
  if (name == "sort") return sort_filter(v, args, line);
  if (name == "unique") return unique_filter(v, line);
  if (name == "dictsort") return dictsort_filter(v, line);
  if (name == "min" || name == "max") return min_max_filter(name, v, line);
  if (name == "sum") {
    Value total = arg(args, 1, "start", Value(0));
    for (const Value& item : iterate(v, line)) {
      charge_work(1, line);
      total = arithmetic("+", total, item, line);
    }
    return total;
  }
  return std::nullopt;
}

Value abs_filter(const Value& v, int line) {
  if (v.is_int()) {
    if (v.as_int() == std::numeric_limits<int64_t>::min())
      type_error(line, "integer overflow in abs");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_number()) return Value(std::fabs(v.as_number()));
  type_error(line, "abs expects a number, got " + v.type_name());
}

// Filters on any value: conversions, defaults, attributes.
std::optional<Value> value_filter(const std::string& name, const Value& v, const CallArgs& args,
                                  int line) {
  if (name == "tojson") return tojson_filter(v, args, line);
  if (name == "default" || name == "d") {
    const bool boolean = arg(args, 1, "boolean", Value(false)).truthy();
    const bool use_default = boolean ? !v.truthy() : v.is_undefined();
    return use_default ? arg(args, 0, "default_value", Value(std::string())) : v;
  }
  if (name == "int") return int_filter(v, args);
  if (name == "float") return float_filter(v, args);
  if (name == "abs") return abs_filter(v, line);
  if (name == "attr") return attribute_of(v, text_of(arg(args, 0, "name")), line);
  if (name == "safe") return v;
  return std::nullopt;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, const CallArgs& args, int line) {
  if (auto out = text_filter(name, v, args, line)) return std::move(*out);
  if (auto out = sequence_filter(name, v, args, line)) return std::move(*out);
  if (auto out = value_filter(name, v, args, line)) return std::move(*out);
  throw TemplateError(line, "unknown filter '" + name + "'");
}

}  // namespace kvforge::jinja
