// GCC 12 reports a false -Wrestrict in std::string's operator+ ("lit" + str),
// which grammar text is built from throughout this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "app/structured/regex_gbnf.h"

#include <cstdio>
#include <vector>

#include "app/structured/json_primitives_gbnf.h"
#include "engine/sampling/grammar/grammar_error.h"
#include "engine/sampling/grammar/utf8_ranges.h"

namespace kvforge {
namespace {

constexpr int kMaxNesting = 32;

// A character written inside a JSON string: escaped where JSON requires it.
std::string json_char_literal(uint32_t cp) {
  std::string s;
  if (cp == '"') return gbnf_literal("\\\"");
  if (cp == '\\') return gbnf_literal("\\\\");
  if (cp == '\n') return gbnf_literal("\\n");
  if (cp == '\t') return gbnf_literal("\\t");
  if (cp == '\r') return gbnf_literal("\\r");
  if (cp < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    return gbnf_literal(buf);
  }
  append_utf8(s, cp);
  return gbnf_literal(s);
}

// A set of code points inside a JSON string: the raw ones as a class, the
// quote and backslash escaped; control characters are left out.
std::string json_class(std::vector<CodeRange> ranges, bool negate) {
  ranges = normalize_ranges(std::move(ranges), negate);
  bool quote = false, backslash = false;
  for (auto [lo, hi] : ranges) {
    quote = quote || (lo <= '"' && '"' <= hi);
    backslash = backslash || (lo <= '\\' && '\\' <= hi);
  }
  // ranges minus what JSON escapes: the complement of (complement + escaped).
  std::vector<CodeRange> outside = normalize_ranges(ranges, true);
  outside.insert(outside.end(), {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}});
  const std::vector<CodeRange> raw = normalize_ranges(outside, true);
  std::vector<std::string> alts;
  if (!raw.empty()) {
    std::string cls = "[";
    char buf[32];
    for (auto [lo, hi] : raw) {
      std::snprintf(buf, sizeof buf, "\\U%08X-\\U%08X", lo, hi);
      cls += buf;
    }
    alts.push_back(cls + "]");
  }
  if (quote) alts.push_back(gbnf_literal("\\\""));
  if (backslash) alts.push_back(gbnf_literal("\\\\"));
  if (alts.empty()) throw GrammarError("json_schema: pattern: a class with no character to write");
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return "(" + out + ")";
}

class RegexParser {
 public:
  explicit RegexParser(std::string_view re) : re_(re) {}

  std::string parse() {
    bool anchored_start = false, anchored_end = false;
    if (!re_.empty() && re_[0] == '^') anchored_start = true, pos_ = 1;
    if (re_.size() > pos_ && re_.back() == '$' && !escaped_at(re_.size() - 1))
      anchored_end = true, re_.remove_suffix(1);
    std::string body = parse_alternatives(0);
    if (pos_ != re_.size()) fail("unbalanced ')'");
    if (!anchored_start) body = "char* " + body;
    if (!anchored_end) body += " char*";
    return body;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw GrammarError("json_schema: pattern: " + what + " (at offset " + std::to_string(pos_) +
                       ")");
  }

  bool escaped_at(size_t i) const {
    size_t n = 0;
    while (i > n && re_[i - 1 - n] == '\\') ++n;
    return n % 2 == 1;
  }

  char peek() const { return pos_ < re_.size() ? re_[pos_] : '\0'; }

  std::string parse_alternatives(int depth) {
    if (depth > kMaxNesting) fail("groups nested too deep");
    std::string out = "(" + parse_sequence(depth);
    while (peek() == '|') {
      ++pos_;
      out += " | " + parse_sequence(depth);
    }
    return out + ")";
  }

  std::string parse_sequence(int depth) {
    std::string out;
    while (pos_ < re_.size() && peek() != '|' && peek() != ')') {
      std::string atom = parse_atom(depth);
      atom += parse_quantifier();
      out += (out.empty() ? "" : " ") + atom;
    }
    return out.empty() ? "\"\"" : out;
  }

  std::string parse_quantifier() {
    const char c = peek();
    std::string q;
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++pos_;
    } else if (c == '{') {
      const size_t close = re_.find('}', pos_);
      if (close == std::string_view::npos) fail("unterminated {m,n}");
      q = std::string(re_.substr(pos_, close + 1 - pos_));
      pos_ = close + 1;
    } else {
      return "";
    }
    if (peek() == '?') ++pos_;  // lazy: the same language
    return q;
  }

  std::string parse_atom(int depth) {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      if (peek() == '?') {
        if (re_.substr(pos_, 2) != "?:") fail("lookaround and named groups are not supported");
        pos_ += 2;
      }
      std::string inner = parse_alternatives(depth + 1);
      if (peek() != ')') fail("expected ')'");
      ++pos_;
      return inner;
    }
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return json_class({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}, true);
    }
    if (c == '\\') return parse_escape(false).first;
    if (c == '^' || c == '$') fail("anchors inside the pattern are not supported");
    if (c == '*' || c == '+' || c == '?' || c == '{') fail("a quantifier with nothing before it");
    size_t p = pos_;
    const uint32_t cp = decode_utf8(re_, p);
    if (cp == kInvalidCodePoint) fail("invalid UTF-8");
    pos_ = p;
    return json_char_literal(cp);
  }

  // An escape: (GBNF of it, its code point ranges for use inside a class).
  std::pair<std::string, std::vector<CodeRange>> parse_escape(bool in_class) {
    ++pos_;
    const char e = peek();
    ++pos_;
    static const std::vector<CodeRange> kDigit = {{'0', '9'}};
    static const std::vector<CodeRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    static const std::vector<CodeRange> kSpace = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}};
    switch (e) {
      case 'd':
        return {json_class(kDigit, false), kDigit};
      case 'w':
        return {json_class(kWord, false), kWord};
      case 's':
        return {json_class(kSpace, false), kSpace};
      case 'D':
      case 'W':
      case 'S': {
        if (in_class) fail("\\D \\W \\S inside a class are not supported");
        const auto& r = e == 'D' ? kDigit : e == 'W' ? kWord : kSpace;
        return {json_class(r, true), {}};
      }
      case 'n':
        return {json_char_literal('\n'), {{'\n', '\n'}}};
      case 't':
        return {json_char_literal('\t'), {{'\t', '\t'}}};
      case 'r':
        return {json_char_literal('\r'), {{'\r', '\r'}}};
      default:
        break;
    }
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
      fail(std::string("the escape \\") + e + " is not supported");
    const uint32_t cp = uint32_t(uint8_t(e));
    return {json_char_literal(cp), {{cp, cp}}};
  }

  std::string parse_class() {
    ++pos_;
    bool negate = false;
    if (peek() == '^') negate = true, ++pos_;
    std::vector<CodeRange> ranges;
    while (peek() != ']') {
      if (pos_ >= re_.size()) fail("unterminated class");
      uint32_t lo = 0;
      if (peek() == '\\') {
        auto [gbnf, r] = parse_escape(true);
        if (r.size() != 1 || r[0].first != r[0].second) {
          ranges.insert(ranges.end(), r.begin(), r.end());
          continue;
        }
        lo = r[0].first;
      } else {
        size_t p = pos_;
        lo = decode_utf8(re_, p);
        if (lo == kInvalidCodePoint) fail("invalid UTF-8");
        pos_ = p;
      }
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < re_.size() && re_[pos_ + 1] != ']') {
        ++pos_;
        if (peek() == '\\') {
          const auto r = parse_escape(true).second;
          if (r.size() != 1 || r[0].first != r[0].second) fail("a class range ending in a set");
          hi = r[0].first;
        } else {
          size_t p = pos_;
          hi = decode_utf8(re_, p);
          pos_ = p;
        }
        if (hi == kInvalidCodePoint || hi < lo) fail("bad class range");
      }
      ranges.emplace_back(lo, hi);
    }
    ++pos_;
    return json_class(ranges, negate);
  }

  std::string_view re_;
  size_t pos_ = 0;
};

}  // namespace
}  // namespace kvforge

namespace kvforge {

std::string regex_string_gbnf(std::string_view pattern) {
  return "\"\\\"\" " + RegexParser(pattern).parse() + " \"\\\"\" space";
}

}  // namespace kvforge
