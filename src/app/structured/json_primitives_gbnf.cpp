// GCC 12 reports a false -Wrestrict in std::string's operator+ ("lit" + str),
// which grammar text is built from throughout this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "app/structured/json_primitives_gbnf.h"

#include <cmath>
#include <cstdio>

#include "app/structured/integer_range_gbnf.h"
#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge {
namespace {

// Nesting of objects and arrays where the schema does not say (any value,
// json_object): bounded, so even a model that never closes a bracket by
// choice is led to a whole value.
constexpr int kAnyValueDepth = 3;
// Open-ended numbers: at most this many integer digits (JavaScript keeps 15
// exactly), fraction digits and exponent digits.
constexpr int64_t kBoundClamp = 999999999999999;
constexpr const char* kFraction = "(\".\" [0-9]{1,6})?";

std::vector<std::pair<std::string, std::string>> make_primitives() {
  std::vector<std::pair<std::string, std::string>> r = {
      {"space", "| \" \""},
      // A \u escape is never a surrogate: ajv counts a pair as one character, the grammar two.
      {"char",
       "[^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-CeEfF] "
       "[0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}))"},
      {"string", "\"\\\"\" char* \"\\\"\" space"},
      {"integer", "\"-\"? (\"0\" | [1-9] [0-9]{0,15}) space"},
      {"number",
       "\"-\"? (\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? space"},
      {"boolean", "(\"true\" | \"false\") space"},
      {"null", "\"null\" space"},
      {"any-string", "\"\\\"\" char{0,32} \"\\\"\" space"},
      {"value-0", "any-string | number | boolean | null"},
  };
  for (int d = 1; d <= kAnyValueDepth; ++d) {
    const std::string in = "value-" + std::to_string(d - 1), s = std::to_string(d);
    r.push_back({"object-" + s, "\"{\" space (any-string \":\" space " + in +
                                    " (\",\" space any-string \":\" space " + in +
                                    "){0,5})? \"}\" space"});
    r.push_back(
        {"array-" + s, "\"[\" space (" + in + " (\",\" space " + in + "){0,5})? \"]\" space"});
    r.push_back({"value-" + s, "object-" + s + " | array-" + s + " | " + in});
  }
  const std::string top = std::to_string(kAnyValueDepth);
  r.push_back({"value", "value-" + top});
  r.push_back({"object", "object-" + top});
  r.push_back({"array", "array-" + top});
  return r;
}

std::string quoted(const std::string& body) { return "\"\\\"\" " + body + " \"\\\"\" space"; }

constexpr const char* kDate =
    "[0-9]{4} \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
    "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | "
    "\"02\" \"-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8]))";
constexpr const char* kTime =
    "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? "
    "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";
constexpr const char* kUuid =
    "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}";
constexpr const char* kEmail =
    "[a-zA-Z0-9_+-]{1,32} (\".\" [a-zA-Z0-9_+-]{1,32}){0,3} \"@\" "
    "([a-zA-Z0-9] ([a-zA-Z0-9-]{0,20} [a-zA-Z0-9])? \".\"){1,3} [a-zA-Z]{2,8}";

int64_t clamp_bound(double v) {
  return int64_t(std::fmax(-double(kBoundClamp), std::fmin(double(kBoundClamp), v)));
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& json_primitive_rules() {
  static const auto rules = make_primitives();
  return rules;
}

std::string gbnf_class_except(std::string_view bytes) {
  std::string out = "[^";
  for (unsigned char c : bytes) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", c);
    out += buf;
  }
  return out + "]";
}

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7F) {
      static const char* kHex = "0123456789ABCDEF";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

std::string string_length_gbnf(size_t min, std::optional<size_t> max) {
  const std::string count = max ? "{" + std::to_string(min) + "," + std::to_string(*max) + "}"
                                : "{" + std::to_string(min) + ",}";
  return quoted("char" + count);
}

std::optional<std::string> string_format_gbnf(const std::string& format) {
  if (format == "date") return quoted(kDate);
  if (format == "time") return quoted(kTime);
  if (format == "date-time") return quoted(std::string("(") + kDate + ") \"T\" (" + kTime + ")");
  if (format == "uuid") return quoted(kUuid);
  if (format == "email") return quoted(kEmail);
  return std::nullopt;
}

// Integers as the range allows; decimals are an integer part with a fraction
// where any fraction stays inside the bounds (below the upper bound's integer
// part, above the lower's on the negative side).
std::string number_range_gbnf(std::optional<double> lo, bool lo_exclusive, std::optional<double> hi,
                              bool hi_exclusive, bool integer) {
  std::optional<int64_t> a, b;
  if (lo) a = clamp_bound(lo_exclusive && std::floor(*lo) == *lo ? *lo + 1 : std::ceil(*lo));
  if (hi) b = clamp_bound(hi_exclusive && std::ceil(*hi) == *hi ? *hi - 1 : std::floor(*hi));
  if (a && b && *a > *b)
    throw GrammarError(
        "json_schema: minimum/maximum leave no integer in range (decimal-only "
        "ranges are not supported)");
  if (integer) return integer_range_gbnf(a, b) + " space";
  std::vector<std::string> alts;
  if (!b || *b >= 0) {
    const int64_t a0 = a ? std::max<int64_t>(*a, 0) : 0;
    if (!b) alts.push_back(integer_range_gbnf(a0, std::nullopt) + " " + kFraction);
    if (b && *b > a0) alts.push_back(integer_range_gbnf(a0, *b - 1) + " " + kFraction);
    if (b) alts.push_back(integer_range_gbnf(*b, *b));
  }
  if (!a || *a < 0) {
    const int64_t m_lo = (b && *b < 0) ? -*b : 1;
    if (!a) alts.push_back("\"-\" " + integer_range_gbnf(m_lo, std::nullopt) + " " + kFraction);
    if (a && -*a > m_lo)
      alts.push_back("\"-\" " + integer_range_gbnf(m_lo, -*a - 1) + " " + kFraction);
    if (a) alts.push_back("\"-\" " + integer_range_gbnf(-*a, -*a));
  }
  std::string body;
  for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
  return "(" + body + ") space";
}

}  // namespace kvforge
