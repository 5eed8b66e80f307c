#include "app/chat/python_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "app/chat/jinja_budget.h"

namespace kvforge::jinja {
namespace {

// Escaped text goes through a small buffer, appended to the output a block at
// a time: appending byte by byte made printing a string of control bytes (one
// of the hot loops of a template bomb) several times slower than copying it.
class EscapedText {
 public:
  explicit EscapedText(std::string& out) : out_(out) {}
  void put(char c) {
    if (n_ == sizeof buf_) flush();
    buf_[n_++] = c;
  }
  void put(char a, char b) {
    put(a);
    put(b);
  }
  // "\xHH" (repr) or "\u00HH" (JSON) for a control byte.
  void put_hex(const char* prefix, unsigned char u) {
    constexpr char kHex[] = "0123456789abcdef";
    for (; *prefix; ++prefix) put(*prefix);
    put(kHex[u >> 4], kHex[u & 15]);
  }
  void flush() {
    out_.append(buf_, n_);
    n_ = 0;
  }

 private:
  std::string& out_;
  char buf_[256];
  size_t n_ = 0;
};

// The budget is charged for the escaped form, up to four bytes per byte of `s`.
void append_repr_string(std::string& out, const std::string& s) {
  const size_t before = out.size();
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  EscapedText text(out);
  text.put(quote);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      text.put('\\', c);
    } else if (c == '\n') {
      text.put('\\', 'n');
    } else if (c == '\r') {
      text.put('\\', 'r');
    } else if (c == '\t') {
      text.put('\\', 't');
    } else if (u < 0x20 || u == 0x7f) {
      text.put_hex("\\x", u);
    } else {
      text.put(c);
    }
  }
  text.put(quote);
  text.flush();
  charge_bytes(out.size() - before);
}

// The budget is charged for the escaped form, up to six bytes per byte of `s`.
void append_json_string(std::string& out, const std::string& s) {
  const size_t before = out.size();
  EscapedText text(out);
  text.put('"');
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        text.put('\\', '"');
        break;
      case '\\':
        text.put('\\', '\\');
        break;
      case '\n':
        text.put('\\', 'n');
        break;
      case '\r':
        text.put('\\', 'r');
        break;
      case '\t':
        text.put('\\', 't');
        break;
      case '\b':
        text.put('\\', 'b');
        break;
      case '\f':
        text.put('\\', 'f');
        break;
      default:
        if (u < 0x20) {
          text.put_hex("\\u00", u);
        } else {
          text.put(c);
        }
    }
  }
  text.put('"');
  text.flush();
  charge_bytes(out.size() - before);
}

void append_repr(std::string& out, const Value& v);

// Printing visits every element, and containers are shared: a list may hold
// the same list many times over, so the text grows with the elements visited,
// not with the values built. Each visit is charged to the render's budget;
// a string quoted by repr() or JSON is charged for its escaped bytes as it
// is written (ChargeAppended), one printed as it is for its own.
void charge_visit(const Value& v, size_t indent_bytes = 0) { charge_bytes(16 + indent_bytes); }

void append_str(std::string& out, const Value& v) {
  charge_visit(v);
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return;
    case Value::Kind::kNone:
      out += "None";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat:
      out += python_float_repr(v.as_number());
      return;
    case Value::Kind::kString:
      charge_bytes(v.as_string().size());
      out += v.as_string();
      return;
    default:
      append_repr(out, v);
  }
}

void append_repr(std::string& out, const Value& v) {
  charge_visit(v);
  switch (v.kind()) {
    case Value::Kind::kString:
      append_repr_string(out, v.as_string());
      return;
    case Value::Kind::kArray: {
      out += '[';
      bool first = true;
      for (const Value& e : v.as_array()) {
        if (!first) out += ", ";
        first = false;
        append_repr(out, e);
      }
      out += ']';
      return;
    }
    case Value::Kind::kObject: {
      if (v.is_namespace()) out += "<Namespace ";
      out += '{';
      bool first = true;
      for (const auto& [k, e] : v.as_object()) {
        if (!first) out += ", ";
        first = false;
        append_repr_string(out, k);
        out += ": ";
        append_repr(out, e);
      }
      out += '}';
      if (v.is_namespace()) out += '>';
      return;
    }
    case Value::Kind::kFunction:
      out += "<function " + v.as_function().name + ">";
      return;
    case Value::Kind::kUndefined:
      return;
    default:
      append_str(out, v);
  }
}

void append_newline_indent(std::string& out, std::optional<int> indent, int level) {
  out += '\n';
  out.append(static_cast<size_t>(*indent) * level, ' ');
}

void append_json(std::string& out, const Value& v, std::optional<int> indent, bool sort_keys,
                 int level);

// Python's json.dumps of a float: NaN and the infinities as JavaScript spells them.
void append_json_float(std::string& out, double d) {
  if (std::isnan(d))
    out += "NaN";
  else if (std::isinf(d))
    out += d > 0 ? "Infinity" : "-Infinity";
  else
    out += python_float_repr(d);
}

// open, item(0) .. item(count - 1), close, laid out as json.dumps does:
// ", " between items, or with an indent "," and each item on its own line.
template <typename Item>
void append_json_items(std::string& out, size_t count, char open, char close,
                       std::optional<int> indent, int level, const Item& item) {
  out += open;
  if (count == 0) {
    out += close;
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    if (i) out += indent ? "," : ", ";
    if (indent) append_newline_indent(out, indent, level + 1);
    item(i);
  }
  if (indent) append_newline_indent(out, indent, level);
  out += close;
}

void append_json_array(std::string& out, const Array& a, std::optional<int> indent, bool sort_keys,
                       int level) {
  append_json_items(out, a.size(), '[', ']', indent, level,
                    [&](size_t i) { append_json(out, a[i], indent, sort_keys, level + 1); });
}

void append_json_object(std::string& out, const Value& v, std::optional<int> indent, bool sort_keys,
                        int level) {
  std::vector<const std::pair<std::string, Value>*> entries;
  for (const auto& e : v.as_object()) entries.push_back(&e);
  if (sort_keys)
    std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
  append_json_items(out, entries.size(), '{', '}', indent, level, [&](size_t i) {
    append_json_string(out, entries[i]->first);
    out += ": ";
    append_json(out, entries[i]->second, indent, sort_keys, level + 1);
  });
}

void append_json(std::string& out, const Value& v, std::optional<int> indent, bool sort_keys,
                 int level) {
  charge_visit(v, indent ? static_cast<size_t>(*indent) * static_cast<size_t>(level + 1) : 0);
  switch (v.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat:
      append_json_float(out, v.as_number());
      return;
    case Value::Kind::kString:
      append_json_string(out, v.as_string());
      return;
    case Value::Kind::kArray:
      append_json_array(out, v.as_array(), indent, sort_keys, level);
      return;
    case Value::Kind::kObject:
      append_json_object(out, v, indent, sort_keys, level);
      return;
    case Value::Kind::kUndefined:
      throw std::invalid_argument("cannot convert an undefined value to JSON");
    case Value::Kind::kFunction:
      throw std::invalid_argument("cannot convert a function to JSON");
  }
}

}  // namespace

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's layout: positional for
  // exponents in [-4, 16), scientific with a two-digit exponent otherwise.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    // Appended piecewise: `"." + digits.substr(1)` trips gcc 12's false -Wrestrict.
    out += '.';
    out.append(digits, 1);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_buf;
}

std::string python_str(const Value& v) {
  std::string out;
  append_str(out, v);
  return out;
}

std::string python_repr(const Value& v) {
  std::string out;
  append_repr(out, v);
  return out;
}

std::string python_json_dumps(const Value& v, std::optional<int> indent, bool sort_keys) {
  std::string out;
  append_json(out, v, indent, sort_keys, 0);
  return out;
}

}  // namespace kvforge::jinja
