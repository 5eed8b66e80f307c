#include "engine/sampling/grammar/gbnf_parser.h"

#include <string>

#include "engine/sampling/grammar/grammar_error.h"
#include "engine/sampling/grammar/utf8_ranges.h"

namespace kvforge {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GbnfLimits& limits) : s_(text), limits_(limits) {}

  std::vector<GbnfRule> parse() {
    std::vector<GbnfRule> rules;
    skip_space(true);
    while (pos_ < s_.size()) {
      GbnfRule rule;
      rule.line = line_;
      rule.name = parse_name();
      skip_space(false);
      if (s_.substr(pos_, 3) != "::=") fail("expected ::= after rule name '" + rule.name + "'");
      pos_ += 3;
      skip_space(true);
      rule.body = parse_alternatives(false, 0);
      if (pos_ < s_.size() && s_[pos_] != '\n') fail("expected end of rule '" + rule.name + "'");
      rules.push_back(std::move(rule));
      skip_space(true);
    }
    return rules;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    const size_t col = pos_ - line_start_;
    throw GrammarError("gbnf: line " + std::to_string(line_) + " column " +
                       std::to_string(col + 1) + ": " + what);
  }

  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }

  void skip_space(bool newline_ok) {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '\n' && newline_ok) {
        ++pos_;
        ++line_;
        line_start_ = pos_;
      } else {
        return;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(s_.substr(start, pos_ - start));
  }

  GbnfAlternatives parse_alternatives(bool nested, int depth) {
    if (depth > limits_.max_nesting)
      fail("parentheses nested deeper than " + std::to_string(limits_.max_nesting));
    GbnfAlternatives alts;
    alts.alternatives.push_back(parse_sequence(nested, depth));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.alternatives.push_back(parse_sequence(nested, depth));
    }
    return alts;
  }

  GbnfSequence parse_sequence(bool nested, int depth) {
    GbnfSequence seq;
    while (pos_ < s_.size()) {
      const char c = peek();
      if (c == '|' || c == ')' || c == '\n') break;
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (seq.empty()) fail(std::string("repetition '") + c + "' with nothing before it");
        parse_repetition(seq.back());
      } else {
        seq.push_back(parse_item(depth));
      }
      skip_space(nested);
    }
    return seq;
  }

  GbnfItem parse_item(int depth) {
    GbnfItem item;
    const char c = peek();
    if (c == '"') {
      ++pos_;
      item.kind = GbnfItem::Kind::Literal;
      while (peek() != '"') {
        if (pos_ >= s_.size()) fail("unterminated string literal");
        append_utf8(item.text, parse_char());
      }
      ++pos_;
    } else if (c == '[') {
      parse_char_class(item);
    } else if (c == '.') {
      ++pos_;
      item.kind = GbnfItem::Kind::AnyChar;
    } else if (c == '(') {
      ++pos_;
      skip_space(true);
      item.kind = GbnfItem::Kind::Group;
      item.group = std::make_shared<GbnfAlternatives>(parse_alternatives(true, depth + 1));
      if (peek() != ')') fail("expected ')'");
      ++pos_;
    } else if (c == '<' || (c == '!' && peek(1) == '<')) {
      parse_token(item);
    } else if (is_name_char(c)) {
      item.kind = GbnfItem::Kind::RuleRef;
      item.text = parse_name();
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return item;
  }

  // `<[id]>` or `<text>` (a token whose text is exactly `<text>`, as
  // `<|start|>`), negated by a leading `!`; bound to ids by GrammarConstraint.
  void parse_token(GbnfItem& item) {
    item.kind = GbnfItem::Kind::Token;
    if (peek() == '!') item.negated = true, ++pos_;
    const size_t start = pos_;
    const size_t close = s_.find('>', start);
    const size_t newline = s_.find('\n', start);
    if (close == std::string_view::npos || newline < close)
      fail("token references end with '>': '<' without one");
    item.text = std::string(s_.substr(start, close + 1 - start));
    pos_ = close + 1;
    if (item.text.size() > 2 && item.text[1] == '[') {
      const std::string_view id = std::string_view(item.text).substr(2, item.text.size() - 4);
      const bool digits = !id.empty() && id.size() <= 9 && item.text[item.text.size() - 2] == ']' &&
                          id.find_first_not_of("0123456789") == std::string_view::npos;
      if (!digits) fail("token references by id are <[digits]>, not '" + item.text + "'");
    } else if (item.text.size() < 3) {
      fail("token references name a token: '<>' names none");
    }
  }

  void parse_char_class(GbnfItem& item) {
    ++pos_;
    item.kind = GbnfItem::Kind::CharClass;
    if (peek() == '^') {
      item.negated = true;
      ++pos_;
    }
    while (peek() != ']') {
      if (pos_ >= s_.size()) fail("unterminated character class");
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < s_.size()) {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail("character range with its end before its start");
      }
      item.ranges.emplace_back(lo, hi);
    }
    ++pos_;
  }

  // One character of a literal or class: an escape or one UTF-8 character.
  uint32_t parse_char() {
    if (peek() == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
          return uint32_t(e);
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        default:
          fail(std::string("unknown escape '\\") + e + "'");
      }
    }
    const uint32_t cp = decode_utf8(s_, pos_);
    if (cp == kInvalidCodePoint) fail("invalid UTF-8");
    if (cp == '\n') ++line_, line_start_ = pos_;
    return cp;
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = hex_value(peek());
      if (d < 0) fail("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + uint32_t(d);
      ++pos_;
    }
    if (v > 0x10FFFF) fail("code point past U+10FFFF");
    return v;
  }

  int64_t parse_count() {
    const size_t start = pos_;
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > limits_.max_repeat)
        fail("repetition count past the limit of " + std::to_string(limits_.max_repeat));
      ++pos_;
    }
    if (pos_ == start) fail("expected a number in {m,n}");
    return v;
  }

  void parse_repetition(GbnfItem& item) {
    if (item.min != 1 || item.max != 1) {
      // x** and the like: repeat the repeated item as a group.
      GbnfItem inner = item;
      item = GbnfItem{};
      item.kind = GbnfItem::Kind::Group;
      item.group = std::make_shared<GbnfAlternatives>();
      item.group->alternatives.push_back({inner});
    }
    const char c = peek();
    ++pos_;
    if (c == '*') item.min = 0, item.max = -1;
    if (c == '+') item.min = 1, item.max = -1;
    if (c == '?') item.min = 0, item.max = 1;
    if (c != '{') return;
    skip_space(false);
    item.min = uint32_t(parse_count());
    item.max = item.min;
    skip_space(false);
    if (peek() == ',') {
      ++pos_;
      skip_space(false);
      item.max = peek() == '}' ? -1 : parse_count();
      if (item.max >= 0 && item.max < item.min) fail("{m,n} with n < m");
    }
    skip_space(false);
    if (peek() != '}') fail("expected '}'");
    ++pos_;
  }

  std::string_view s_;
  const GbnfLimits& limits_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

}  // namespace

std::vector<GbnfRule> parse_gbnf(std::string_view text, const GbnfLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw GrammarError("gbnf: grammar of " + std::to_string(text.size()) + " bytes, at most " +
                       std::to_string(limits.max_bytes) + " allowed");
  return GbnfParser(text, limits).parse();
}

}  // namespace kvforge
